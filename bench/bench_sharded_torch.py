#!/usr/bin/env python3
"""The PyTorch reference for bench_sharded.py and bench_tensor.py: one strategy, N CPU ranks (Gloo,
one intra-op thread each), Hugging Face BertForQuestionAnswering built from a
config (no download) on synthetic batches, AdamW (fused when the CPU build has
it), gradient clipping; the same work as `hpcbench run` with bench_sharded.py's
flags (bert-mini, seq 64, batch 2 per rank, lr 5e-5, weight decay 0.01 on all
but biases and LayerNorm, max grad norm 1.0, the config's dropout 0.1).

Strategies and what they are in PyTorch:

  ddp           torch.nn.parallel.DistributedDataParallel (25 MB buckets,
                gradient_as_bucket_view=True so the gradients are the buckets)
  zero-1        DDP + torch.distributed.optim.ZeroRedundancyOptimizer(AdamW);
                it partitions whole parameters (greedily by size), so the
                rank that owns the word embeddings (7.8 M of bert-mini's
                11.1 M) holds their AdamW states: its state is above
                8Psi + 8Psi/N and does not shrink past 2 ranks
  fsdp-full     FSDP2 fully_shard on each BertLayer, the embeddings, then the
                root (which takes the QA head and the pooler-less rest),
                reshard_after_forward=True (FULL_SHARD)
  zero-3        the same run as fsdp-full: PyTorch has no ZeRO-3 of its own;
                FSDP FULL_SHARD is its ZeRO-3 (and hpcbench's zero 3 and
                fsdp full are one engine with one plan)
  fsdp-grad-op  as fsdp-full with reshard_after_forward=False (SHARD_GRAD_OP)
  fsdp-hybrid   fully_shard over a 2-D DeviceMesh ("replicate", "shard") of
                shape (N/g, g), g = max(N // 2, 1) (HSDP; shard groups are
                consecutive ranks, as hpcbench's --shard-group-size)
  tensor        DTensor tensor parallelism over all N ranks: parallelize_module
                on each BertLayer with Megatron's plan (query, key, value and
                intermediate.dense ColwiseParallel, attention.output.dense and
                output.dense RowwiseParallel), embeddings and QA head
                replicated, every rank reading the same batch; the global norm
                for clipping summed over the shards' squares (as hpcbench).
                --recompute: Hugging Face's gradient_checkpointing_enable()
  zero-2        not available: PyTorch has no native stage 2 (gradients
                reduce-scattered, parameters kept replicated). DDP all-reduces
                whole gradients and ZeroRedundancyOptimizer shards only the
                optimizer states; FSDP's SHARD_GRAD_OP also shards the
                parameters between steps, so it is fsdp-grad-op, not zero 2.
                Asking for it prints {"strategy": "zero-2", "skipped": ...}.

FSDP2 on CPU with Gloo works in torch 2.11 (init_device_mesh("cpu", ...),
fully_shard, DTensor fused AdamW and clip_grad_norm_ over DTensor gradients).

Timing: 2 warm-up steps (--warmup), a barrier, then time.perf_counter around
forward + backward + clip + optimizer step + zero_grad on every rank; a step's
time is its slowest rank's (all-reduce MAX per step), the figure the median of
those, as hpcbench's step_ms_median.

Model state per rank: bytes of the local parameters (FSDP2: the DTensor local
shards, p.to_local()), their gradients and the optimizer state tensors this rank
holds (ZeroRedundancyOptimizer: its local partition's), taken after the first
optimizer step, before zero_grad; the maximum over ranks. This is the persistent
part only (docs/memory.md's ZeRO table): PyTorch's transient gathered
parameters and unsharded gradients are not counted, whereas hpcbench's
model_state_bytes includes them (the working set W).

Prints one JSON line from rank 0:
  {"strategy": ..., "ranks": N, "step_ms_median": ..., "model_state_bytes_max": ...}

    $V/bin/python bench/bench_sharded_torch.py --strategy fsdp-full --ranks 2 [--steps 8] [--model bert-mini]
"""
import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# layers, hidden, heads, intermediate (hpcbench's presets, lib/model/bert.cpp)
MODELS = {
    "bert-tiny": (2, 128, 2, 512),
    "bert-mini": (4, 256, 4, 1024),
    "bert-small": (4, 512, 8, 2048),
    "bert-medium": (8, 512, 8, 2048),
    "bert-base-uncased": (12, 768, 12, 3072),
}
STRATEGIES = ["ddp", "zero-1", "zero-2", "zero-3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid", "tensor"]
PLAN_COLWISE = ("attention.self.query", "attention.self.key", "attention.self.value", "intermediate.dense")
PLAN_ROWWISE = ("attention.output.dense", "output.dense")
UNAVAILABLE = {"zero-2": "PyTorch has no native ZeRO stage 2 (replicated parameters, sharded gradients)"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local(t):
    """The tensor this rank holds: a DTensor's local shard, else the tensor."""
    return t.to_local() if hasattr(t, "to_local") else t


def nbytes(t):
    t = local(t)
    return t.numel() * t.element_size()


def adamw_kwargs():
    # Fused AdamW runs on CPU since torch 2.4; hpcbench steps ATen's fused kernel too.
    try:
        torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], fused=True).step()
        return {"fused": True}
    except (RuntimeError, TypeError):
        return {"foreach": True}


def param_groups(model, wd):
    decay = [p for k, p in model.named_parameters() if "bias" not in k and "LayerNorm" not in k]
    rest = [p for k, p in model.named_parameters() if "bias" in k or "LayerNorm" in k]
    return [{"params": decay, "weight_decay": wd}, {"params": rest, "weight_decay": 0.0}]


def build(args, rank, n):
    from transformers import BertConfig, BertForQuestionAnswering
    layers, hidden, heads, inter = MODELS[args.model]
    cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=inter, max_position_embeddings=512)
    torch.manual_seed(args.seed)  # every rank starts from the same weights
    model = BertForQuestionAnswering(cfg)
    model.train()
    if args.recompute:
        (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
    s = args.strategy
    kw = dict(lr=args.lr, betas=(0.9, 0.999), eps=1e-8, **adamw_kwargs())
    if s in ("ddp", "zero-1"):
        wrapped = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25, gradient_as_bucket_view=True)
        if s == "ddp":
            opt = torch.optim.AdamW(param_groups(model, args.weight_decay), **kw)
        else:
            from torch.distributed.optim import ZeroRedundancyOptimizer
            groups = param_groups(model, args.weight_decay)
            # ZeroRedundancyOptimizer takes the first group in its constructor, the rest by add_param_group.
            opt = ZeroRedundancyOptimizer(groups[0]["params"], optimizer_class=torch.optim.AdamW,
                                          weight_decay=groups[0]["weight_decay"], **kw)
            opt.add_param_group(groups[1])
        return model, wrapped, opt
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    if s == "tensor":
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
        mesh = init_device_mesh("cpu", (n,))
        plan = {name: ColwiseParallel() for name in PLAN_COLWISE}
        plan.update({name: RowwiseParallel() for name in PLAN_ROWWISE})
        for layer in model.bert.encoder.layer:
            parallelize_module(layer, mesh, plan)
        # The fused kernel takes a group's tensors together: DTensors and
        # plain tensors in groups of their own.
        groups = [{"params": [p for p in g["params"] if hasattr(p, "to_local") == split],
                   "weight_decay": g["weight_decay"]}
                  for g in param_groups(model, args.weight_decay) for split in (True, False)]
        return model, model, torch.optim.AdamW([g for g in groups if g["params"]], **kw)
    if s == "fsdp-hybrid":
        g = max(n // 2, 1)
        mesh = init_device_mesh("cpu", (n // g, g), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh("cpu", (n,))
    reshard = s != "fsdp-grad-op"
    for layer in model.bert.encoder.layer:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model.bert.embeddings, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    opt = torch.optim.AdamW(param_groups(model, args.weight_decay), **kw)
    return model, model, opt


def state_bytes(model, opt, strategy):
    params = list(model.parameters())
    total = sum(nbytes(p) for p in params)
    total += sum(nbytes(p.grad) for p in params if p.grad is not None)
    if strategy == "zero-1":
        state = opt.optim.state  # the local partition's AdamW
    else:
        state = opt.state
    for st in state.values():
        total += sum(nbytes(v) for v in st.values() if torch.is_tensor(v))
    return total


def clip_tensor_parallel(model, max_norm):
    """clip_grad_norm_ over a model whose split parameters are DTensors: their
    local shards' squares summed over the ranks, the replicated ones once."""
    split, whole = [], []
    for p in model.parameters():
        if p.grad is not None:
            (split if hasattr(p.grad, "to_local") else whole).append(p.grad)
    sq = torch.stack([local(g).norm() ** 2 for g in split]).sum() if split else torch.zeros(())
    dist.all_reduce(sq)
    total = (sq + sum(g.norm() ** 2 for g in whole)).sqrt()
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in split + whole:
        local(g).mul_(coef)


def worker(rank, n, port, args, out):
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    model, wrapped, opt = build(args, rank, n)
    # A tensor-parallel group reads one batch; replicas read their own.
    g = torch.Generator().manual_seed(args.seed + (0 if args.strategy == "tensor" else rank))
    b, s = args.batch, args.seq
    batches = [dict(input_ids=torch.randint(1000, 30000, (b, s), generator=g),
                    token_type_ids=torch.randint(0, 2, (b, s), generator=g),
                    attention_mask=torch.ones(b, s, dtype=torch.long),
                    start_positions=torch.randint(0, s, (b,), generator=g),
                    end_positions=torch.randint(0, s, (b,), generator=g))
               for _ in range(args.steps)]
    times, state = [], 0
    for step, batch in enumerate(batches):
        if step == args.warmup:
            dist.barrier()
        t0 = time.perf_counter()
        loss = wrapped(**batch).loss
        loss.backward()
        if args.max_grad_norm > 0 and args.strategy == "tensor":
            clip_tensor_parallel(model, args.max_grad_norm)
        elif args.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        opt.step()
        if step == 0:
            t_state = time.perf_counter()
            state = state_bytes(model, opt, args.strategy)
            t0 += time.perf_counter() - t_state  # not part of the step
        opt.zero_grad(set_to_none=True)
        times.append((time.perf_counter() - t0) * 1000)
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # a step ends when its slowest rank ends it
    m = torch.tensor([state], dtype=torch.float64)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"strategy": args.strategy, "ranks": n,
                       "step_ms_median": statistics.median(t[args.warmup:].tolist()),
                       "model_state_bytes_max": int(m.item())}, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strategy", required=True, choices=STRATEGIES)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--model", default="bert-mini", choices=sorted(MODELS))
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps, warm-up included")
    ap.add_argument("--warmup", type=int, default=2, help="steps left out of the timing")
    ap.add_argument("--batch", type=int, default=2, help="sequences per rank per step")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--max-grad-norm", type=float, default=1.0, help="<= 0: no clipping")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--recompute", action="store_true", help="activation checkpointing of every encoder layer")
    args = ap.parse_args()
    if args.steps <= args.warmup:
        sys.exit("--steps must exceed --warmup")
    if args.strategy in UNAVAILABLE:
        print(json.dumps({"strategy": args.strategy, "ranks": args.ranks, "skipped": UNAVAILABLE[args.strategy]}))
        return
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        mp.spawn(worker, args=(args.ranks, free_port(), args, out), nprocs=args.ranks, join=True)
        with open(out) as f:
            print(json.dumps(json.load(f)), flush=True)


if __name__ == "__main__":
    main()
