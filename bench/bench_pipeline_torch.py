#!/usr/bin/env python3
"""The PyTorch side of bench_pipeline.py: torch.distributed.pipelining
(ScheduleGPipe / Schedule1F1B) on transformers' BertForQuestionAnswering cut
as hpcbench cuts it (tests/reference/pipeline_reference.py's stages), Gloo on
CPU, one intra-op thread per rank, AdamW on each stage. Prints one JSON line:
the median step (forward, backward, optimizer; the slowest rank's) over the
timed steps and each rank's model-state bytes (parameters, gradients, Adam's
two moments).

  python bench/bench_pipeline_torch.py --stages 2 --micro 4 --schedule 1f1b --batch 8 --seq 128
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.distributed as dist

from ddp_reference import free_port
from pipeline_reference import Stage, balanced, qa_loss

PRESETS = {"bert-tiny": (2, 128, 2, 512), "bert-mini": (4, 256, 4, 1024), "bert-small": (4, 512, 8, 2048)}


def worker(rank, world, port, a, out):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    from transformers import BertConfig, BertForQuestionAnswering

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    layers, hidden, heads, inter = PRESETS[a.model]
    cfg = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads, intermediate_size=inter,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="sdpa")
    torch.manual_seed(7)
    model = BertForQuestionAnswering(cfg).train()
    rows = a.batch // a.micro
    first, last = rank == 0, rank == world - 1
    masks = [torch.ones(rows, a.seq, dtype=torch.long)] * a.micro
    mine = balanced(layers, world)[rank]
    module = Stage(model, mine, first, last, masks, [])
    hidden_t = torch.zeros(rows, a.seq, hidden)
    ids = torch.randint(1, cfg.vocab_size, (a.batch, a.seq))
    types = torch.zeros(a.batch, a.seq, dtype=torch.long)
    target = torch.randint(0, a.seq, (a.batch, 2))
    inputs = (ids[:rows], types[:rows]) if first else (hidden_t,)
    outputs = torch.zeros(rows, a.seq, 2) if last else hidden_t
    stage = PipelineStage(module, rank, world, torch.device("cpu"), input_args=inputs, output_args=outputs)
    kind = ScheduleGPipe if a.schedule == "gpipe" else Schedule1F1B
    sched = kind(stage, n_microbatches=a.micro, loss_fn=qa_loss)
    opt = torch.optim.AdamW(module.parameters(), lr=1e-5, foreach=True)
    times = []
    state = 0
    for step in range(a.steps):
        module.calls = 0
        dist.barrier()
        t0 = time.perf_counter()
        if first and last:
            sched.step(ids, types, target=target)
        elif first:
            sched.step(ids, types)
        elif last:
            sched.step(target=target)
        else:
            sched.step()
        opt.step()
        if step == 0:
            tensors = list(module.parameters()) + [p.grad for p in module.parameters() if p.grad is not None]
            tensors += [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0]
            state = sum(t.numel() * t.element_size() for t in tensors)
        opt.zero_grad(set_to_none=True)
        times.append((time.perf_counter() - t0) * 1000)
    timed = torch.tensor(times[a.warmup:], dtype=torch.float64)
    slowest = [torch.zeros_like(timed) for _ in range(world)]
    dist.all_gather(slowest, timed)
    states = [None] * world
    dist.all_gather_object(states, state)
    if rank == 0:
        per_step = torch.stack(slowest).max(0).values.tolist()
        with open(out, "w") as f:
            json.dump({"step_ms_median": statistics.median(per_step), "rank_model_state_bytes": states}, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="bert-mini", choices=sorted(PRESETS))
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--schedule", default="1f1b", choices=["gpipe", "1f1b"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    if a.batch % a.micro:
        sys.exit(f"--batch {a.batch} must be a multiple of --micro {a.micro}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        torch.multiprocessing.spawn(worker, args=(a.stages, free_port(), a, out), nprocs=a.stages, join=True)
        with open(out) as f:
            print(f.read())


if __name__ == "__main__":
    main()
