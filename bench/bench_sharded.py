"""The memory/time trade of the sharded strategies, in one table: for 1, 2
and 4 ranks on this machine, the median step time and the model-state bytes
per rank (parameters + gradients + Adam states at their peak) of ddp, zero
stages 1-3 and fsdp (full, grad-op, hybrid; prefetch on and off), beside the
memory model's figure for the same run (docs/memory.md: the ZeRO paper's
16Psi, 8Psi + 8Psi/N, 4Psi + 12Psi/N, 16Psi/N plus the working set of the
gathered units) and the ratio to ddp's time and memory.

With --reference (the default; --no-reference skips it) every row is run
again right after it on the PyTorch stack, bench/bench_sharded_torch.py: DDP,
DDP + ZeroRedundancyOptimizer, FSDP2 fully_shard (full, grad-op, HSDP) on the
same shapes, ranks and threads, and the table adds its step time and model
state per rank and the ratios torch / hpcbench (time > 1: hpcbench is faster).
zero-3 is compared with FSDP2 full sharding (PyTorch's ZeRO-3; one torch run
serves both rows); zero-2 has no PyTorch-native equivalent and the no-pf rows
none either (FSDP2 always prefetches): they print "-". The torch state is the
persistent part only (shards, their gradients, AdamW states after the first
step), hpcbench's includes the gathered working set, so for zero-3 / fsdp
the state ratio is below 1 by that working set (docs/memory.md).

    V=~/.cache/hpcbench/venv-<hash>
    $V/bin/python bench/bench_sharded.py --bin build/hpcbench [--model bert-mini] [--steps 8] [--precision bf16]
"""
import argparse
import json
import os
import subprocess
import sys
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

# Row -> the bench_sharded_torch.py strategy run as its reference (None: no PyTorch equivalent).
TORCH = {"ddp": "ddp", "zero-1": "zero-1", "zero-2": None, "zero-3": "fsdp-full", "zero-3 no-pf": None,
         "fsdp-full": "fsdp-full", "fsdp-full no-pf": None, "fsdp-grad-op": "fsdp-grad-op",
         "fsdp-hybrid": "fsdp-hybrid"}
TORCH_MODELS = ("bert-tiny", "bert-mini", "bert-small", "bert-medium", "bert-base-uncased")


def torch_reference(strategy, n, a, cache):
    """(step ms, state bytes) of the PyTorch run for this row, or None."""
    if strategy is None:
        return None
    if (strategy, n) not in cache:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_sharded_torch.py")
        cmd = [sys.executable, script, "--strategy", strategy, "--ranks", str(n), "--model", a.model,
               "--steps", str(a.steps), "--warmup", "2", "--batch", "2", "--seq", "64", "--threads", "1"]
        # hpcbench keeps freed blocks in glibc's heap (lib/core/host_allocator.h);
        # the PyTorch processes get the same setting, so allocator page
        # faults favour neither side.
        env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_=str(1 << 30),
                   MALLOC_TRIM_THRESHOLD_=str(1 << 30))
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        r = None
        if p.returncode != 0:
            print(f"torch {strategy}-{n}: failed\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        else:
            j = json.loads(p.stdout.strip().splitlines()[-1])
            if "step_ms_median" in j:
                r = (j["step_ms_median"], j["model_state_bytes_max"])
        cache[(strategy, n)] = r
    return cache[(strategy, n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--precision", default="fp32", help="fp32, bf16 or fp16 (bf16/fp16 are slow on most CPUs)")
    ap.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the PyTorch reference (bench_sharded_torch.py) for every row (fp32, presets only)")
    a = ap.parse_args()
    reference = a.reference and a.precision == "fp32" and a.model in TORCH_MODELS
    if a.reference and not reference:
        print(f"# no PyTorch reference: it runs fp32 and the presets {', '.join(TORCH_MODELS)} only")
    rows = []
    cache = {}
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
                ref = torch_reference(TORCH[name], n, a, cache) if reference else None
                rows.append((n, name, r["step_ms_median"], r["comm_exposed_ms"], r["model_state_bytes"],
                             r["model_state_theory_bytes"], r["strategy_options"], ref))
    print(f"# hpcbench sharded strategies, {a.model}, seq 64, batch 2 per rank, {a.precision}, Gloo on CPU, "
          "1 thread per rank")
    print("# state: parameters + gradients + Adam states per rank at their peak (measured); model: docs/memory.md")
    if reference:
        print("# torch: bench_sharded_torch.py, the same work on DDP / ZeroRedundancyOptimizer / FSDP2 (zero-3 = "
              "FSDP2 full); '-': no PyTorch equivalent")
        print("# torch state: persistent part only (no gathered working set); t/h: torch / hpcbench, time > 1: "
              "hpcbench is faster")
        print("# both keep freed memory in glibc's heap (hpcbench by mallopt, torch by MALLOC_*_THRESHOLD_)")
    ref1 = f" {'torch step':>11} {'torch state':>12} {'time t/h':>9} {'state t/h':>10}" if reference else ""
    ref2 = f" {'(ms)':>11} {'(MiB)':>12} {'':>9} {'':>10}" if reference else ""
    print(f"{'ranks':>5}  {'strategy':<16} {'step':>9} {'waiting':>9} {'state/rank':>11} {'model':>11} "
          f"{'time/ddp':>9} {'state/ddp':>10}{ref1}  options")
    print(f"{'':>5}  {'':<16} {'(ms)':>9} {'(ms)':>9} {'(MiB)':>11} {'(MiB)':>11} {'':>9} {'':>10}{ref2}")
    ddp = {n: (ms, b) for n, s, ms, _, b, _, _, _ in rows if s == "ddp"}
    for n, s, ms, comm, b, t, opts, ref in rows:
        dms, db = ddp.get(n, (float("nan"), float("nan")))
        cmp = ""
        if ref:
            tms, tb = ref
            cmp = f" {tms:>11.1f} {tb / 2**20:>12.2f} {tms / ms:>9.2f} {tb / b:>10.2f}"
        elif reference:
            cmp = f" {'-':>11} {'-':>12} {'-':>9} {'-':>10}"
        print(f"{n:>5}  {s:<16} {ms:>9.1f} {comm:>9.1f} {b / 2**20:>11.2f} {t / 2**20:>11.2f} {ms / dms:>9.2f} "
              f"{b / db:>10.2f}{cmp}  {opts}")


if __name__ == "__main__":
    main()
