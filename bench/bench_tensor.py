"""The tensor strategy on this machine beside DTensor's: for tp 2 and 4 (all
ranks one tensor-parallel group), with and without activation
checkpointing, hpcbench's median step time, exposed communication and
model-state bytes per rank (with the memory model's figure), and the same
work on PyTorch's parallelize_module with ColwiseParallel / RowwiseParallel
(bench/bench_sharded_torch.py --strategy tensor): bert-mini, seq 64, batch 2
read by every rank of the group, the config's dropout, Gloo on CPU, one
intra-op thread per rank. t/h: torch / hpcbench (time > 1: hpcbench is
faster). Timings are not pass/fail; the machine is shared.

    V=~/.cache/hpcbench/venv-<hash>
    $V/bin/python bench/bench_tensor.py --bin build/hpcbench [--ranks 2,4] [--steps 8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ranks", default="2,4")
    a = ap.parse_args()
    torch_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_sharded_torch.py")
    env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_=str(1 << 30),
               MALLOC_TRIM_THRESHOLD_=str(1 << 30))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.ranks.split(",")]:
            for recompute in (False, True):
                run = f"tp{n}{'-ac' if recompute else ''}"
                cmd = [a.bin, "run", "--model", a.model, "--synthetic-samples", "256", "--max-seq-length", "64",
                       "--doc-stride", "16", "--batch-size", "2", "--max-steps", str(a.steps),
                       "--timing-warmup-steps", "2", "--threads", "1", "--results-dir", tmp, "--run-name", run,
                       "--cache-dir", "none", "--nproc-per-node", str(n), "--strategy", "tensor", "--tp-size", str(n)]
                cmd += ["--activation-checkpointing"] if recompute else []
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"{run}: failed\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                    continue
                with open(os.path.join(tmp, run, "run.json")) as f:
                    r = json.load(f)["result"]
                tcmd = [sys.executable, torch_script, "--strategy", "tensor", "--ranks", str(n), "--model", a.model,
                        "--steps", str(a.steps), "--warmup", "2", "--batch", "2", "--seq", "64", "--threads", "1"]
                tcmd += ["--recompute"] if recompute else []
                tp = subprocess.run(tcmd, capture_output=True, text=True, env=env)
                ref = None
                if tp.returncode != 0:
                    print(f"torch {run}: failed\n{tp.stdout[-2000:]}{tp.stderr[-2000:]}")
                else:
                    j = json.loads(tp.stdout.strip().splitlines()[-1])
                    ref = (j["step_ms_median"], j["model_state_bytes_max"])
                rows.append((n, recompute, r, ref))
    print(f"# hpcbench tensor vs DTensor parallelize_module, {a.model}, seq 64, batch 2 per group, Gloo on CPU, "
          f"1 thread per rank, {os.cpu_count()} CPUs visible")
    print("# state: parameters + gradients + Adam states per rank after the first step (measured); model: the spec's")
    print(f"{'ranks':>5} {'recompute':>9} {'step':>8} {'exposed':>8} {'state':>8} {'model':>8} {'peak':>8} "
          f"{'torch step':>10} {'torch state':>11} {'time t/h':>8} {'state t/h':>9}")
    print(f"{'':>5} {'':>9} {'(ms)':>8} {'(ms)':>8} {'(MiB)':>8} {'(MiB)':>8} {'(MiB)':>8} {'(ms)':>10} {'(MiB)':>11}")
    for n, rc, r, ref in rows:
        ms, b = r["step_ms_median"], r["model_state_bytes"]
        cmp = f"{ref[0]:>10.1f} {ref[1] / 2**20:>11.2f} {ref[0] / ms:>8.2f} {ref[1] / b:>9.2f}" if ref else "-"
        print(f"{n:>5} {'on' if rc else 'off':>9} {ms:>8.1f} {r['comm_exposed_ms']:>8.1f} {b / 2**20:>8.2f} "
              f"{r['model_state_theory_bytes'] / 2**20:>8.2f} {r['peak_memory_bytes'] / 2**20:>8.1f} {cmp}")


if __name__ == "__main__":
    main()
