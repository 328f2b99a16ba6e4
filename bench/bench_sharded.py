"""The memory/time trade of the sharded strategies, in one table: for 1, 2
and 4 ranks on this machine, the median step time and the model-state bytes
per rank (parameters + gradients + Adam states at their peak) of ddp, zero
stages 1-3 and fsdp (full, grad-op), beside the theoretical figures for
Psi parameters and N ranks in fp32 with Adam (ddp 16 Psi; stage 1
8 Psi + 8 Psi/N; stage 2 4 Psi + 12 Psi/N; stage 3 / full shard 16 Psi/N,
plus the gathered working set of the largest unit, which the measured
figures include and the bare formulas do not).

    V=~/.cache/hpcbench/venv-<hash>
    $V/bin/python bench/bench_sharded.py --bin build/hpcbench [--model bert-mini] [--steps 8]
"""
import argparse
import json
import os
import subprocess
import tempfile

# (name, flags, formula(Psi, N), bytes of the working set in units of U, the
# largest unit's parameter count: gathered parameters and one unit's full
# gradients, as lib/strategies/shard/memory.h counts them)
STRATEGIES = [
    ("ddp", ["--strategy", "ddp"], lambda p, n: 16 * p, 0),
    ("zero-1", ["--strategy", "zero", "--zero-stage", "1"], lambda p, n: 8 * p + 8 * p / n, 4),
    ("zero-2", ["--strategy", "zero", "--zero-stage", "2"], lambda p, n: 4 * p + 12 * p / n, 4),
    ("zero-3", ["--strategy", "zero", "--zero-stage", "3"], lambda p, n: 16 * p / n, 8),
    ("fsdp-full", ["--strategy", "fsdp", "--sharding", "full"], lambda p, n: 16 * p / n, 8),
    ("fsdp-grad-op", ["--strategy", "fsdp", "--sharding", "grad-op"], lambda p, n: 4 * p + 16 * p / n, 4),
]
HIDDEN = {"bert-tiny": 128, "bert-mini": 256, "bert-small": 512, "bert-medium": 512, "bert-base-uncased": 768}


def largest_unit(model):
    # The embeddings: word (30522), position (512) and token-type (2) tables
    # plus their LayerNorm; larger than any encoder layer for these models.
    h = HIDDEN[model]
    return (30522 + 512 + 2) * h + 2 * h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ranks", default="1,2,4")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.ranks.split(",")]:
            for name, args, theory, units in STRATEGIES:
                run = f"{name}-{n}"
                cmd = [a.bin, "run", "--model", a.model, "--synthetic-samples", "256", "--max-seq-length", "64",
                       "--doc-stride", "16", "--batch-size", "2", "--max-steps", str(a.steps),
                       "--timing-warmup-steps", "2", "--threads", "1", "--results-dir", tmp, "--run-name", run,
                       "--nproc-per-node", str(n)] + args
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"{run}: failed\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                    continue
                with open(os.path.join(tmp, run, "run.json")) as f:
                    r = json.load(f)["result"]
                psi = r["parameters"]
                rows.append((n, name, r["step_ms_median"], r["model_state_bytes"], theory(psi, n) * 1.0,
                             theory(psi, n) + units * largest_unit(a.model) if n > 1 or units == 0 else None))
    print(f"# hpcbench sharded strategies, {a.model}, seq 64, batch 2 per rank, fp32, Gloo on CPU, 1 thread per rank")
    print(f"{'ranks':>5}  {'strategy':<13} {'step (ms)':>10} {'state/rank (MiB)':>17} {'formula (MiB)':>14} "
          f"{'+ working set':>14} {'vs ddp':>7}")
    ddp = {n: b for n, s, _, b, _, _ in rows if s == "ddp"}
    for n, s, ms, b, t, tw in rows:
        rel = b / ddp[n] if n in ddp else float("nan")
        tws = f"{tw / 2**20:>14.2f}" if tw is not None else f"{'-':>14}"
        print(f"{n:>5}  {s:<13} {ms:>10.1f} {b / 2**20:>17.2f} {t / 2**20:>14.2f} {tws} {rel:>7.2f}")


if __name__ == "__main__":
    main()
