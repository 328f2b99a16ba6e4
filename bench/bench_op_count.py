#!/usr/bin/env python3
"""Host work per training step, counted: the ATen operations one step of
`hpcbench run` dispatches (HPCBENCH_COUNT_OPS=1, lib/train/op_count.h) under
the baseline and ddp / zero / fsdp at 1 and 2 ranks, beside the same step of
Hugging Face's BertForQuestionAnswering in eager mode counted with the
PyTorch profiler (forward, backward, clip_grad_norm_ with foreach, AdamW
fused, the linear schedule, zero_grad(set_to_none=True); fp32, no autocast:
CPU). Both count RecordFunction events of operator scope:

- top-level: operations not called from inside another ATen operation, the
  dispatches the framework code makes (on a GPU, about one launch each);
- in all: with the operations those call in turn (on CPU a foreach operation
  runs one per tensor, on a GPU it is one kernel for all).

Counts are deterministic (the same on every run), so this measures a change
to the step's host work exactly where timings on a shared machine are noise.
The sequence length changes no count (the same operations on bigger
tensors), so a short one keeps the CPU time down.

    V=/root/.cache/hpcbench/venv-9d1d7d1a288d
    $V/bin/python bench/bench_op_count.py --bin build/hpcbench \
        [--model bert-base-uncased] [--seq 64] [--batch 2] [--ranks 1,2] [--no-reference] [--fused]
        [--strategies baseline,ddp,zero-1,zero-2,zero-3,fsdp,fsdp-grad-op,tensor] [--graph] [--time-steps 20]
        [--hb-flags=--no-residual-fold]

--graph adds each row under --cuda-graph (the graph-ready step, run uncaptured on
the CPU); --time-steps N adds the median step of an N-step run without the counter.
"""
import argparse
import csv
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

STRATEGIES = {
    "baseline": [],
    "ddp": ["--strategy", "ddp"],
    "zero-1": ["--strategy", "zero", "--zero-stage", "1"],
    "zero-2": ["--strategy", "zero", "--zero-stage", "2"],
    "zero-3": ["--strategy", "zero", "--zero-stage", "3"],
    "fsdp": ["--strategy", "fsdp", "--sharding", "full"],
    "fsdp-grad-op": ["--strategy", "fsdp", "--sharding", "grad-op"],
    "tensor": ["--strategy", "tensor"],
}
DEFAULT = "baseline,ddp,zero-2,zero-3,fsdp"
PRESETS = {
    "bert-tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
    "bert-mini": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "bert-base-uncased": dict(),
}
LINE = re.compile(r"ops rank (\d+) step (\d+): (\d+) top-level, (\d+) in all")


def hpcbench_cmd(args, name, nproc, workdir, fused, graph, steps, tag):
    extra = STRATEGIES[name] + (["--fused"] if fused else []) + (["--cuda-graph"] if graph else [])
    run_name = f"{name}-{nproc}{'-fused' if fused else ''}{'-graph' if graph else ''}-{tag}"
    cmd = [args.bin, "run", *extra, "--model", args.model, "--train-data", "synthetic",
           "--synthetic-samples", str(args.batch * max(nproc, 1) * (steps + args.warmup + 1)),
           "--max-seq-length", str(args.seq), "--doc-stride", str(args.seq // 2), "--batch-size", str(args.batch),
           "--max-steps", str(steps + args.warmup), "--timing-warmup-steps", str(args.warmup),
           "--precision", "fp32", "--device", "cpu", "--threads", "1", "--cache-dir", "none", "--log-every", "1000",
           "--results-dir", workdir, "--run-name", run_name, *shlex.split(args.hb_flags)]
    if STRATEGIES[name]:
        cmd[2:2] = ["--nproc-per-node", str(nproc)]
    return cmd, os.path.join(workdir, run_name)


def hpcbench_step_ms(args, name, nproc, workdir, fused=False, graph=False):
    """The median step of a run without the op counter (its callback costs host time): on a CPU
    with bert-tiny's small tensors, mostly the host's work per step."""
    if args.time_steps <= 0:
        return float("nan")
    cmd, folder = hpcbench_cmd(args, name, nproc, workdir, fused, graph, args.time_steps, "time")
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    with open(os.path.join(folder, "summary.csv")) as f:
        return float(next(csv.DictReader(f))["step_ms_median"])


def hpcbench_counts(args, name, nproc, workdir, fused=False, graph=False):
    """Rank 0's counts per step after the warm-up: {step: (top, all)}."""
    cmd, _ = hpcbench_cmd(args, name, nproc, workdir, fused, graph, args.steps, "ops")
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1", HPCBENCH_COUNT_OPS="1"))
    if r.returncode != 0 and graph and "--cuda-graph" in r.stdout + r.stderr:
        return None  # refused before launch (a binary where the strategy cannot capture)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    per_rank = {}
    for rank, step, top, total in LINE.findall(r.stdout + r.stderr):
        per_rank.setdefault(int(rank), {})[int(step)] = (int(top), int(total))
    if 0 not in per_rank:
        sys.exit(f"{' '.join(cmd)} printed no op counts (HPCBENCH_COUNT_OPS unsupported by this binary?)")
    return per_rank


def hf_counts(args):
    import warnings

    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import BertConfig, BertForQuestionAnswering
    from transformers.optimization import get_linear_schedule_with_warmup
    from transformers.trainer_pt_utils import get_parameter_names

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = BertConfig(**PRESETS[args.model])
    model = BertForQuestionAnswering(cfg)
    model.train()
    decay = set(get_parameter_names(model, [torch.nn.LayerNorm], ["bias", "layernorm", "rmsnorm"]))
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": 0.0},
        {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=5e-5, betas=(0.9, 0.999), eps=1e-8, fused=True)
    sched = get_linear_schedule_with_warmup(opt, 0, args.warmup + args.steps + 1)
    b, seq = args.batch, args.seq
    ids = torch.randint(1, cfg.vocab_size, (b, seq))
    types = torch.zeros(b, seq, dtype=torch.long)
    types[:, seq // 2:] = 1
    mask = torch.ones(b, seq, dtype=torch.long)
    start = torch.randint(0, seq, (b,))
    end = (start + 3).clamp(max=seq - 1)

    def step():
        loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask, start_positions=start,
                     end_positions=end).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss.item()  # the trainer reads the loss each step, as hpcbench does

    for _ in range(args.warmup):
        step()
    counts = []
    warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
    for _ in range(args.steps):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        events = [e for e in prof.events() if e.scope == 0 and e.name.startswith("aten::")]
        ids_of = {id(e) for e in events}

        def nested(e):
            p = e.cpu_parent
            while p is not None:
                if id(p) in ids_of:
                    return True
                p = p.cpu_parent
            return False

        counts.append((sum(1 for e in events if not nested(e)), len(events)))
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the hpcbench executable")
    ap.add_argument("--model", default="bert-base-uncased", choices=sorted(PRESETS))
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2, help="counted steps (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--strategies", default=DEFAULT, help=f"any of {','.join(STRATEGIES)}")
    ap.add_argument("--graph", action="store_true",
                    help="each hpcbench row also with --cuda-graph (on the CPU the graph-ready step runs uncaptured)")
    ap.add_argument("--time-steps", type=int, default=0,
                    help="also time each row: the median step (ms) of a run of this many steps without the counter")
    ap.add_argument("--no-reference", action="store_true", help="hpcbench only")
    ap.add_argument("--fused", action="store_true",
                    help="each hpcbench row also with --fused (on the CPU the fused kernels are their ATen composites)")
    ap.add_argument("--hb-flags", default="",
                    help="further flags for every hpcbench run (an A/B of one setting: --hb-flags=--no-residual-fold)")
    args = ap.parse_args()
    for s in args.strategies.split(","):
        if s not in STRATEGIES:
            sys.exit(f"--strategies {s}: not one of {', '.join(STRATEGIES)}")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.strategies.split(","):
            for nproc in ([1] if name == "baseline" else [int(r) for r in args.ranks.split(",")]):
                for fused in [False, True] if args.fused else [False]:
                    for graph in [False, True] if args.graph else [False]:
                        per_rank = hpcbench_counts(args, name, nproc, workdir, fused, graph)
                        label = (f"hpcbench {name}{' --fused' if fused else ''}{' --cuda-graph' if graph else ''}"
                                 f"{' ' + args.hb_flags if args.hb_flags else ''}")
                        if per_rank is None:
                            rows.append((label, nproc, float("nan"), float("nan"), float("nan"), "refused"))
                            continue
                        steps = per_rank[0]
                        top = statistics.median(t for t, _ in steps.values())
                        total = statistics.median(a for _, a in steps.values())
                        same = len({v for r in per_rank.values() for v in r.values()}) == 1
                        ms = hpcbench_step_ms(args, name, nproc, workdir, fused, graph)
                        rows.append((label, nproc, top, total, ms, "" if same else "counts differ by step/rank"))
    if not args.no_reference:
        counts = hf_counts(args)
        rows.append(("HF eager (fused AdamW, foreach clip)", 1, statistics.median(c[0] for c in counts),
                     statistics.median(c[1] for c in counts), float("nan"),
                     "" if len(set(counts)) == 1 else "counts differ by step"))
    print(f"ATen operations per training step, {args.model}, seq {args.seq}, batch {args.batch} per rank, fp32 CPU, "
          f"median of {args.steps} steps after {args.warmup} warm-up (rank 0)"
          + (f"; step ms: median of {args.time_steps} steps of a run without the counter" if args.time_steps > 0 else ""))
    print(f"{'':<52}{'ranks':>6}{'top-level':>11}{'in all':>9}" + (f"{'step ms':>9}" if args.time_steps > 0 else ""))
    def num(x, width, digits=0):
        return f"{x:>{width}.{digits}f}" if x == x else f"{'-':>{width}}"

    for name, n, top, total, ms, note in rows:
        timed = "" if args.time_steps <= 0 else num(ms, 9, 2)
        print(f"{name:<52}{n:>6}{num(top, 11)}{num(total, 9)}{timed}  {note}")


if __name__ == "__main__":
    main()
