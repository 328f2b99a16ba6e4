"""PyTorch's own FSDP2 (torch.distributed.fsdp.fully_shard; Gloo, CPU, 2 ranks)
on the data and initial weights of an hpcbench run, for
tests/strategies/test_fsdp_parity.cpp (hpcbench's fsdp full and zero 3).

hpcbench supplies only the inputs, from an `fsdp --sharding full` run: the
synthetic training features, the initial weights (a Hugging Face folder) and
its per-rank sample order, checked against torch.utils.data.DistributedSampler.
The training is transformers' BertForQuestionAnswering under fully_shard,
twice from the same start:

  fp32  no mixed precision;
  bf16  MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32), the
        configuration of `--precision bf16 --reduce-dtype fp32`.

Both as hpcbench sets them up: one FSDP unit per encoder layer, one for the
embeddings, the root (which then holds only the QA head); the parameter
groups of lib/train/optimizer.cpp's decays() for fused AdamW (ATen's kernel,
the one hpcbench steps); clip_grad_norm_ over the DTensor gradients; the
linear warm-up schedule; the loss computed outside the model in fp32, as
hpcbench computes it from the compute-dtype logits (in bf16, Hugging Face's
own loss would run cross-entropy on bf16 logits, which hpcbench does not).
Writes $HPCBENCH_REF_DIR/fsdp_reference/{initial/, data.safetensors,
fsdp2_fp32.safetensors, fsdp2_bf16.safetensors, fsdp2.json}.
"""
import json
import math
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from ddp_reference import free_port, hpcbench_flags

WORLD = 2
STEPS = 5
BATCH = 2  # per rank
SETTINGS = dict(seed=13, lr=5e-4, eps=1e-6, weight_decay=0.01, warmup_ratio=0.4, max_grad_norm=1.0,
                samples=48, seq=64)
# The flags every hpcbench run of the comparison shares (the test adds the
# strategy and the precision); the test reads them from fsdp2.json.
FLAGS = hpcbench_flags(SETTINGS, STEPS, BATCH)
COLUMNS = ("input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions")


def decays(name):
    """lib/train/optimizer.cpp's decays(): no weight decay on biases and norms."""
    n = name.lower()
    norm_part = (".norm." in n or n.startswith("norm.") or n.endswith(".norm") or "_norm." in n
                 or n.endswith("_norm"))
    return "bias" not in n and "layernorm" not in n and "rmsnorm" not in n and not norm_part


def qa_loss(start_logits, end_logits, start_positions, end_positions):
    """BertForQuestionAnswering's loss, on fp32 logits."""
    ignored = start_logits.size(1)
    ce = torch.nn.CrossEntropyLoss(ignore_index=ignored)
    return (ce(start_logits.float(), start_positions.clamp(0, ignored)) +
            ce(end_logits.float(), end_positions.clamp(0, ignored))) / 2


def train(out, data, order, precision):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import BertForQuestionAnswering, get_linear_schedule_with_warmup

    # SDPA, as hpcbench's attention calls it (the same CPU kernel in bf16).
    model = BertForQuestionAnswering.from_pretrained(os.path.join(out, "initial"), attn_implementation="sdpa",
                                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.train()
    mesh = init_device_mesh("cpu", (WORLD,))
    if precision == "bf16":
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    else:
        mp = MixedPrecisionPolicy()
    fully_shard(model.bert.embeddings, mesh=mesh, mp_policy=mp)
    for layer in model.bert.encoder.layer:
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)

    named = list(model.named_parameters())
    groups = [{"params": [p for k, p in named if decays(k)], "weight_decay": SETTINGS["weight_decay"]},
              {"params": [p for k, p in named if not decays(k)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=SETTINGS["lr"], eps=SETTINGS["eps"], fused=True)
    sched = get_linear_schedule_with_warmup(opt, math.ceil(SETTINGS["warmup_ratio"] * STEPS), STEPS)
    losses = []
    for step in range(STEPS):
        batch = {k: data[k][order[step]] for k in COLUMNS}
        o = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                  attention_mask=batch["attention_mask"])
        loss = qa_loss(o.start_logits, o.end_logits, batch["start_positions"], batch["end_positions"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), SETTINGS["max_grad_norm"])
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        l = loss.detach().clone()
        dist.all_reduce(l)
        losses.append(l.item() / WORLD)
    # Every rank gathers (a collective); rank 0 writes.
    state = {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().contiguous()
             for k, v in model.state_dict().items()}
    return state, losses


def worker(rank, out, port):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    data = load_file(os.path.join(out, "data.safetensors"))
    n = data["input_ids"].shape[0]
    sampler = torch.utils.data.DistributedSampler(range(n), num_replicas=WORLD, rank=rank, shuffle=True,
                                                  seed=SETTINGS["seed"])
    sampler.set_epoch(0)
    mine = torch.tensor(list(sampler)[: STEPS * BATCH]).view(STEPS, 1, BATCH)
    dumped = data[f"order_rank{rank}"]  # [steps, accum, rows]
    if not torch.equal(mine, dumped):
        raise SystemExit(f"rank {rank}: hpcbench's sample order {dumped.flatten().tolist()} is not "
                         f"DistributedSampler's {mine.flatten().tolist()}")
    order = mine.view(STEPS, BATCH)

    meta = {"flags": FLAGS, "world": WORLD, "steps": STEPS, "torch": torch.__version__}
    for precision in ("fp32", "bf16"):
        state, losses = train(out, data, order, precision)
        meta[f"losses_{precision}"] = losses
        if rank == 0:
            save_file(state, os.path.join(out, f"fsdp2_{precision}.safetensors"))
    if rank == 0:
        with open(os.path.join(out, "fsdp2.json"), "w") as f:
            json.dump(meta, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def main():
    out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "fsdp_reference")
    os.makedirs(out, exist_ok=True)
    for f in ("fsdp2.json", "fsdp2_fp32.safetensors", "fsdp2_bf16.safetensors"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    hpcbench = os.environ["HPCBENCH_BIN"]
    cmd = (f"{hpcbench} run --strategy fsdp --sharding full --nproc-per-node {WORLD} {FLAGS} --precision fp32 "
           f"--results-dir {out}/runs --run-name inputs-{os.getpid()} --save-initial-checkpoint {out}/initial "
           f"--dump-data {out}/data.safetensors")
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd}\nfailed:\n{r.stdout}\n{r.stderr}")
    torch.multiprocessing.spawn(worker, args=(out, free_port()), nprocs=WORLD, join=True)
    print(f"torch FSDP2 reference written to {out}")


if __name__ == "__main__":
    main()
