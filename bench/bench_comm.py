#!/usr/bin/env python3
"""hpcbench bench-comm against torch.distributed on the same machine, in the
same run: both over Gloo on CPU, 2 local ranks, the same ops, sizes and
iteration counts, each op waited for before the next (blocking), times
averaged over iterations and ranks, nccl-tests' busbw factors. Prints both
busbw columns and their ratio (hpcbench / torch).

  python bench/bench_comm.py --bin build/hpcbench [--nproc 2] [--max-bytes 4M]
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]


def parse_bytes(s):
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(s)


def bus_factor(op, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}.get(op, 1.0)


def sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_worker(rank, n, port, args, out_path):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    rows = []
    for op in OPS:
        last = -1
        for size in sizes(args.min_bytes, args.max_bytes, args.factor):
            count = size // 4
            if op in ("all_gather", "reduce_scatter"):
                count = count // n * n
            if count == 0 or count == last:
                continue
            last = count
            x = torch.ones(count if op in ("all_reduce", "broadcast", "reduce_scatter") else count // n)
            out = torch.empty(count // n if op == "reduce_scatter" else count)
            def run():
                if op == "all_reduce":
                    dist.all_reduce(x)
                elif op == "all_gather":
                    dist.all_gather_into_tensor(out, x)
                elif op == "reduce_scatter":
                    dist.reduce_scatter_tensor(out, x)
                else:
                    dist.broadcast(x, 0)
            for _ in range(args.warmup_iters):
                run()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(args.iters):
                run()
            t = torch.tensor([(time.perf_counter() - t0) / args.iters], dtype=torch.float64)
            dist.all_reduce(t)
            t_us = t.item() / n * 1e6
            algbw = count * 4 / (t_us * 1e-6) / 1e9
            rows.append((op, count * 4, t_us, algbw * bus_factor(op, n)))
    if rank == 0:
        with open(out_path, "w") as f:
            for r in rows:
                f.write(" ".join(map(str, r)) + "\n")
    dist.destroy_process_group()


def run_torch(args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "rows.txt")
        mp.spawn(torch_worker, args=(args.nproc, free_port(), args, out), nprocs=args.nproc, join=True)
        rows = {}
        for line in open(out):
            op, b, t, bw = line.split()
            rows[(op, int(b))] = (float(t), float(bw))
        return rows


def run_hpcbench(args):
    cmd = [args.bin, "bench-comm", "--nproc-per-node", str(args.nproc), "--device", "cpu",
           "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes), "--factor",
           str(args.factor), "--iters", str(args.iters), "--warmup-iters", str(args.warmup_iters)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"hpcbench bench-comm failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    rows, header = {}, []
    for line in p.stdout.splitlines():
        line = re.sub(r"^\[rank 0\] ", "", line)
        if line.startswith("#"):
            header.append(line)
            continue
        f = line.split()
        if len(f) == 10 and f[0] in OPS:
            if int(f[9]) != 0:
                sys.exit(f"hpcbench reported {f[9]} wrong values: {line}")
            rows[(f[0], int(f[1]))] = (float(f[6]), float(f[8]))
    return rows, header


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--min-bytes", default="8")
    ap.add_argument("--max-bytes", default="4M")
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup-iters", type=int, default=5)
    args = ap.parse_args()
    args.min_bytes, args.max_bytes = parse_bytes(args.min_bytes), parse_bytes(args.max_bytes)

    ours, header = run_hpcbench(args)
    ref = run_torch(args)
    print("\n".join(h for h in header if h.startswith("# hpcbench") or h.startswith("# backend")))
    print(f"# torch {torch.__version__} torch.distributed gloo, {args.nproc} ranks, iters {args.iters}, "
          f"warmup {args.warmup_iters}")
    print(f"{'op':>15} {'size(B)':>10} {'hpcbench us':>12} {'torch us':>10} {'hpcbench busbw':>15} "
          f"{'torch busbw':>12} {'ratio':>6}")
    ratios = []
    for key in sorted(ours, key=lambda k: (OPS.index(k[0]), k[1])):
        if key not in ref:
            continue
        (t1, b1), (t2, b2) = ours[key], ref[key]
        ratio = t2 / t1  # = busbw ratio before rounding: same bytes, same factor
        ratios.append(ratio)
        print(f"{key[0]:>15} {key[1]:>10} {t1:>12.1f} {t2:>10.1f} {b1:>15.4f} {b2:>12.4f} {ratio:>6.2f}")
    if ratios:
        import statistics
        print(f"# median busbw ratio hpcbench/torch: {statistics.median(ratios):.2f} over {len(ratios)} rows")


if __name__ == "__main__":
    main()
