"""The memory/time trade of the sharded strategies, in one table: for 1, 2
and 4 ranks on this machine, the median step time and the model-state bytes
per rank (parameters + gradients + Adam states at their peak) of ddp, zero
stages 1-3 and fsdp (full, grad-op, hybrid; prefetch on and off), beside the
memory model's figure for the same run (docs/memory.md: the ZeRO paper's
16Psi, 8Psi + 8Psi/N, 4Psi + 12Psi/N, 16Psi/N plus the working set of the
gathered units) and the ratio to ddp's time and memory.

    V=~/.cache/hpcbench/venv-<hash>
    $V/bin/python bench/bench_sharded.py --bin build/hpcbench [--model bert-mini] [--steps 8] [--precision bf16]
"""
import argparse
import json
import os
import subprocess
import tempfile

# (name, flags); hybrid's shard group is half the ranks (two "nodes").
STRATEGIES = [
    ("ddp", ["--strategy", "ddp"]),
    ("zero-1", ["--strategy", "zero", "--zero-stage", "1"]),
    ("zero-2", ["--strategy", "zero", "--zero-stage", "2"]),
    ("zero-3", ["--strategy", "zero", "--zero-stage", "3"]),
    ("zero-3 no-pf", ["--strategy", "zero", "--zero-stage", "3", "--no-prefetch"]),
    ("fsdp-full", ["--strategy", "fsdp", "--sharding", "full"]),
    ("fsdp-full no-pf", ["--strategy", "fsdp", "--sharding", "full", "--no-prefetch"]),
    ("fsdp-grad-op", ["--strategy", "fsdp", "--sharding", "grad-op"]),
    ("fsdp-hybrid", ["--strategy", "fsdp", "--sharding", "hybrid"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--precision", default="fp32", help="fp32, bf16 or fp16 (bf16/fp16 are slow on most CPUs)")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.ranks.split(",")]:
            for name, args in STRATEGIES:
                if name == "fsdp-hybrid":
                    args = args + ["--shard-group-size", str(max(n // 2, 1))]
                run = f"{name.replace(' ', '-')}-{n}"
                cmd = [a.bin, "run", "--model", a.model, "--synthetic-samples", "256", "--max-seq-length", "64",
                       "--doc-stride", "16", "--batch-size", "2", "--max-steps", str(a.steps),
                       "--timing-warmup-steps", "2", "--threads", "1", "--results-dir", tmp, "--run-name", run,
                       "--precision", a.precision, "--nproc-per-node", str(n)] + args
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"{run}: failed\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                    continue
                with open(os.path.join(tmp, run, "run.json")) as f:
                    r = json.load(f)["result"]
                rows.append((n, name, r["step_ms_median"], r["comm_ms"], r["model_state_bytes"],
                             r["model_state_theory_bytes"], r["strategy_options"]))
    print(f"# hpcbench sharded strategies, {a.model}, seq 64, batch 2 per rank, {a.precision}, Gloo on CPU, "
          "1 thread per rank")
    print("# state: parameters + gradients + Adam states per rank at their peak (measured); model: docs/memory.md")
    print(f"{'ranks':>5}  {'strategy':<16} {'step':>9} {'waiting':>9} {'state/rank':>11} {'model':>11} "
          f"{'time/ddp':>9} {'state/ddp':>10}  options")
    print(f"{'':>5}  {'':<16} {'(ms)':>9} {'(ms)':>9} {'(MiB)':>11} {'(MiB)':>11} {'':>9} {'':>10}")
    ddp = {n: (ms, b) for n, s, ms, _, b, _, _ in rows if s == "ddp"}
    for n, s, ms, comm, b, t, opts in rows:
        dms, db = ddp.get(n, (float("nan"), float("nan")))
        print(f"{n:>5}  {s:<16} {ms:>9.1f} {comm:>9.1f} {b / 2**20:>11.2f} {t / 2**20:>11.2f} {ms / dms:>9.2f} "
              f"{b / db:>10.2f}  {opts}")


if __name__ == "__main__":
    main()
