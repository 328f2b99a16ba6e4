#!/usr/bin/env python3
"""Pipeline layouts on this machine: hpcbench's pipeline strategy (GPipe,
1F1B, dp x pp) at 2 and 4 CPU ranks, beside the same work under PyTorch's
torch.distributed.pipelining (bench_pipeline_torch.py) and beside `hpcbench
predict` for it (from a 1-rank baseline run and bench-comm at the same rank
count). Prints step time, the measured bubble and its theory, model-state
bytes per rank (the largest), PyTorch's figures and predict's error. Timings
are not pass/fail: the machine is shared and noisy.

  python bench/bench_pipeline.py --bin build/hpcbench [--model bert-mini] [--batch 8] [--no-reference]

Gloo on CPU, one intra-op thread per rank; 4 ranks on fewer cores take
turns on them (a note says so), which neither side's figure hides.
"""
import argparse
import json
import os
import sys
import tempfile

import cpu_runs

HERE = os.path.dirname(os.path.abspath(__file__))

# (ranks, label, PyTorch's equivalent as bench_pipeline_torch.py arguments or None)
LAYOUTS = [
    (2, "pipeline:stages=2,micro-batches=4,schedule=gpipe", ["--stages", "2", "--micro", "4", "--schedule", "gpipe"]),
    (2, "pipeline:stages=2,micro-batches=4", ["--stages", "2", "--micro", "4", "--schedule", "1f1b"]),
    (2, "pipeline:stages=2,micro-batches=8", ["--stages", "2", "--micro", "8", "--schedule", "1f1b"]),
    (4, "pipeline:stages=4,micro-batches=4", ["--stages", "4", "--micro", "4", "--schedule", "1f1b"]),
    (4, "pipeline:stages=4,micro-batches=8,schedule=gpipe", ["--stages", "4", "--micro", "8", "--schedule", "gpipe"]),
    (4, "pipeline:stages=2,dp-size=2,micro-batches=4", None),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8, help="rows per data-parallel replica and step")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--no-reference", action="store_true", help="hpcbench and predict only")
    a = ap.parse_args()
    load0 = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, n, args):
            return cpu_runs.run(a, tmp, name, n, a.batch * 4 * (a.steps + 2), args + ["--dropout", "0"])

        base = run("baseline", 1, ["--strategy", "baseline"])["result"]
        predicted = {}
        for n in sorted({n for n, _, _ in LAYOUTS}):
            labels = [l for m, l, _ in LAYOUTS if m == n]
            predicted.update(zip(labels, cpu_runs.predicted(a, tmp, n, labels, "16M")))
        for i, (n, label, torch_args) in enumerate(LAYOUTS):
            j = run(f"pp{i}", n, ["--strategy", label])
            m = j["result"]
            layout = m["strategy_options"].split("layout=")[1].split(",")[0]
            p = predicted[label]
            ref = None
            if torch_args and not a.no_reference:
                out = cpu_runs.sh([sys.executable, os.path.join(HERE, "bench_pipeline_torch.py"), "--model",
                                   a.model, "--batch", str(a.batch), "--seq", str(a.seq), "--steps", str(a.steps),
                                   "--warmup", "3"] + torch_args)
                ref = json.loads(out.strip().splitlines()[-1])
            rows.append((n, layout, label.split(":")[1], m, float(p["step_ms"]), float(p["memory_bytes"]),
                         max(j["rank_model_state_bytes"]), ref))
    cores = os.cpu_count()
    load1 = os.getloadavg()[0]
    print(f"# hpcbench pipeline layouts: {a.model}, seq {a.seq}, batch {a.batch} per replica, fp32, Gloo on CPU, "
          f"1 thread per rank, {cores} CPUs visible")
    print(f"# baseline (1 rank): step {base['step_ms_median']:.1f} ms; load average {load0:.1f} at the start, "
          f"{load1:.1f} at the end")
    print("# bubble: measured (mean over stages, median over steps) and (P-1)/(M+P-1); state: the largest rank's;")
    print("# predict: error = predicted / measured - 1; torch: torch.distributed.pipelining on the same shapes")
    print(f"{'ranks':>5} {'layout':<8} {'options':<40} {'step ms':>8} {'pred':>8} {'error':>7} {'bubble':>7} "
          f"{'theory':>7} {'state MiB':>9} {'pred MiB':>8} {'torch ms':>9} {'torch MiB':>9} {'torch/ours':>10}  note")
    for n, layout, opts, m, ps, pm, state, ref in rows:
        note = f"oversubscribed: {n} ranks on {cores} cores" if cores and n > cores else ""
        tms = f"{ref['step_ms_median']:9.1f}" if ref else f"{'-':>9}"
        tmb = f"{max(ref['rank_model_state_bytes']) / 2**20:9.2f}" if ref else f"{'-':>9}"
        ratio = f"{ref['step_ms_median'] / m['step_ms_median']:9.2f}x" if ref else f"{'-':>10}"
        print(f"{n:>5} {layout:<8} {opts:<40} {m['step_ms_median']:8.1f} {ps:8.1f} {ps / m['step_ms_median'] - 1:+7.1%} "
              f"{m['bubble_fraction']:7.3f} {m['bubble_theory']:7.3f} {state / 2**20:9.2f} {pm / 2**20:8.2f} "
              f"{tms} {tmb} {ratio}  {note}")


if __name__ == "__main__":
    main()
