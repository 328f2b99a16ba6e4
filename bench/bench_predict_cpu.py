#!/usr/bin/env python3
"""The scaling model on this machine: predictions for ddp, zero-2, zero-3,
fsdp and tensor (one group of all ranks; at 4 ranks also dp2 x tp2) at 2 and 4 CPU ranks, from a 1-rank baseline run and a bench-comm run at
the same rank count, beside the measured runs. Prints each prediction's error
(timings are not pass/fail: the machine is shared and noisy).

  python bench/bench_predict_cpu.py --bin build/hpcbench [--model bert-mini] [--steps 12] [--ranks 2,4]

Gloo on CPU, one intra-op thread per rank. With more ranks than free cores
(4 ranks on a 2-core machine) the ranks take turns on the cores: compute slows
and Gloo's threads compete with it, which the model (compute as the baseline
measured it) does not know; the errors there measure that oversubscription.
"""
import argparse
import os
import tempfile

import cpu_runs

# Each strategy's label: what `run --strategy` and `predict --strategies` take.
STRATEGIES = ["ddp", "zero:stage=2", "zero:stage=3", "fsdp:sharding=full"]


def strategies_at(n):
    """The labels at n ranks: tensor's group is every rank (its default at one
    node), and at 4 ranks dp2 x tp2 too."""
    return STRATEGIES + ["tensor"] + (["tensor:tp-size=2"] if n >= 4 else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--ranks", default="2,4")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, n, args):
            return cpu_runs.run(a, tmp, name, n, a.batch * max(ranks) * (a.steps + 2), args)["result"]

        base = run("baseline", 1, ["--strategy", "baseline"])
        rows = []
        for n in ranks:
            pred = cpu_runs.predicted(a, tmp, n, strategies_at(n), "64M")
            # predict names each configuration by its canonical label (options
            # at their defaults left out): in the same order as asked.
            for name, p in zip(strategies_at(n), pred):
                m = run(f"{name.replace(':', '-').replace('=', '')}-{n}", n, ["--strategy", name])
                rows.append((n, name, m["step_ms_median"], float(p["step_ms"]), m["comm_exposed_ms"],
                             float(p["comm_exposed_ms"]), m["model_state_bytes"], float(p["memory_bytes"])))
    cores = os.cpu_count()
    load1 = os.getloadavg()[0]
    print(f"# hpcbench predict against measured runs: {a.model}, seq {a.seq}, batch {a.batch} per rank, fp32, "
          f"Gloo on CPU, 1 thread per rank, {os.cpu_count()} CPUs visible")
    print(f"# baseline (1 rank): step {base['step_ms_median']:.1f} ms (forward {base['forward_ms']:.1f}, "
          f"backward {base['backward_ms']:.1f}, optimizer {base['optimizer_ms']:.1f})")
    print(f"# load average (1 min) {load0:.1f} at the start, {load1:.1f} at the end: other work shares the cores")
    print("# network: bench-comm at the same rank count (--comm); error = predicted / measured - 1")
    print("# compute = step - exposed communication: the model takes it from the 1-rank baseline; when it grows")
    print("# at N ranks, the cores were shared (by the ranks, Gloo's threads or other jobs), not the network")
    print(f"{'ranks':>5}  {'strategy':<18} {'step meas':>10} {'step pred':>10} {'error':>7} {'exposed meas':>13} "
          f"{'exposed pred':>13} {'compute meas':>13} {'compute pred':>13} {'state meas':>11} {'state pred':>11}  note")
    for n, s, ms, ps, em, ep, bm, bp in rows:
        note = f"oversubscribed: {n} ranks on {cores} cores" if cores and n > cores else ""
        print(f"{n:>5}  {s:<18} {ms:>10.1f} {ps:>10.1f} {ps / ms - 1:>+7.1%} {em:>13.1f} {ep:>13.1f} "
              f"{ms - em:>13.1f} {ps - ep:>13.1f} {bm / 2**20:>10.2f}M {bp / 2**20:>10.2f}M  {note}")


if __name__ == "__main__":
    main()
