"""What the CPU benchmarks that set runs beside predict share: running a
command, one `hpcbench run` on CPU ranks, and predict's rows from bench-comm
at the same rank count."""
import csv
import json
import os
import subprocess
import sys


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p.stdout


def run(a, results, name, n, samples, args):
    """One fp32 run on n CPU ranks of one thread each (a: --bin, --model,
    --seq, --batch, --steps); returns its run.json."""
    sh([a.bin, "run", "--model", a.model, "--synthetic-samples", str(samples), "--max-seq-length", str(a.seq),
        "--batch-size", str(a.batch), "--max-steps", str(a.steps), "--timing-warmup-steps", "3", "--threads", "1",
        "--device", "cpu", "--cache-dir", "none", "--log-every", "1000", "--results-dir", results,
        "--run-name", name, "--precision", "fp32"] + (["--nproc-per-node", str(n)] if n > 1 else []) + args)
    with open(os.path.join(results, name, "run.json")) as f:
        return json.load(f)


def predicted(a, results, n, labels, max_bytes):
    """predict's rows for `labels` at n ranks of one node, from the run
    folder results/baseline and bench-comm measured now; in the order asked
    (predict names each row by its canonical label)."""
    comm = os.path.join(results, f"comm-{n}.txt")
    sh([a.bin, "bench-comm", "--nproc-per-node", str(n), "--device", "cpu", "--op", "all", "--min-bytes", "1K",
        "--max-bytes", max_bytes, "--factor", "4", "--iters", "5", "--warmup-iters", "2", "--output", comm])
    pred_csv = os.path.join(results, f"pred-{n}.csv")
    sh([a.bin, "predict", "--baseline", os.path.join(results, "baseline"), "--comm", comm, "--strategies",
        ",".join(labels), "--nodes", "1", "--gpus-per-node", str(n), "--csv", pred_csv])
    with open(pred_csv) as f:
        return list(csv.DictReader(f))
