"""PyTorch's own DistributedDataParallel (Gloo, CPU, 2 ranks) on the data and
initial weights of an hpcbench run, for tests/strategies/test_strategy_parity.

hpcbench supplies only the inputs: the synthetic training features, the
initial weights (a Hugging Face folder) and its per-rank sample order. The
order is checked against torch.utils.data.DistributedSampler; the training
itself is transformers' BertForQuestionAnswering under torch DDP with the
Trainer's AdamW groups, linear schedule and clipping. Writes
$HPCBENCH_REF_DIR/ddp_reference/{initial/,torch_final.safetensors,torch.json}.
"""
import json
import math
import os
import socket
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

WORLD = 2
STEPS = 5
BATCH = 2  # per rank
SETTINGS = dict(seed=11, lr=5e-4, eps=1e-6, weight_decay=0.01, warmup_ratio=0.4, max_grad_norm=1.0,
                samples=48, seq=64)


def hpcbench_flags(settings, steps, batch):
    """The `hpcbench run` flags that fix a comparison's model, data, optimizer and schedule."""
    return (f"--model bert-tiny --synthetic-samples {settings['samples']} --max-seq-length {settings['seq']} "
            f"--max-steps {steps} --batch-size {batch} --timing-warmup-steps 0 --dropout 0 "
            f"--device cpu --threads 1 --cache-dir none --seed {settings['seed']} --lr {settings['lr']} "
            f"--adam-eps {settings['eps']} --weight-decay {settings['weight_decay']} "
            f"--warmup-ratio {settings['warmup_ratio']} --max-grad-norm {settings['max_grad_norm']}")


# The flags of both hpcbench runs (this one, and the test's own from the same
# initial weights); the test reads them from torch.json.
FLAGS = hpcbench_flags(SETTINGS, STEPS, BATCH) + " --precision fp32"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def decays(name):
    n = name.lower()
    return "bias" not in n and "layernorm" not in n


def worker(rank, out, port):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    from transformers import BertForQuestionAnswering, get_linear_schedule_with_warmup

    model = BertForQuestionAnswering.from_pretrained(os.path.join(out, "initial"), attn_implementation="eager",
                                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    data = load_file(os.path.join(out, "data.safetensors"))
    n = data["input_ids"].shape[0]

    sampler = torch.utils.data.DistributedSampler(range(n), num_replicas=WORLD, rank=rank, shuffle=True,
                                                  seed=SETTINGS["seed"])
    sampler.set_epoch(0)
    order = list(sampler)
    dumped = data[f"order_rank{rank}"]  # [steps, accum, rows]
    mine = torch.tensor(order[: STEPS * BATCH]).view(STEPS, 1, BATCH)
    if not torch.equal(mine, dumped):
        raise SystemExit(f"rank {rank}: hpcbench's sample order {dumped.flatten().tolist()} is not "
                         f"DistributedSampler's {mine.flatten().tolist()}")

    named = list(model.named_parameters())
    groups = [{"params": [p for k, p in named if decays(k)], "weight_decay": SETTINGS["weight_decay"]},
              {"params": [p for k, p in named if not decays(k)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=SETTINGS["lr"], eps=SETTINGS["eps"])
    warmup = math.ceil(SETTINGS["warmup_ratio"] * STEPS)
    sched = get_linear_schedule_with_warmup(opt, warmup, STEPS)
    losses = []
    for step in range(STEPS):
        idx = torch.tensor(order[step * BATCH:(step + 1) * BATCH])
        batch = {k: data[k][idx] for k in ("input_ids", "token_type_ids", "attention_mask", "start_positions",
                                           "end_positions")}
        loss = ddp(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), SETTINGS["max_grad_norm"])
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        l = loss.detach().clone()
        dist.all_reduce(l)
        losses.append(l.item() / WORLD)
    if rank == 0:
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()},
                  os.path.join(out, "torch_final.safetensors"))
        with open(os.path.join(out, "torch.json"), "w") as f:
            json.dump({"losses": losses, "flags": FLAGS, "world": WORLD, "steps": STEPS}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def main():
    out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "ddp_reference")
    os.makedirs(out, exist_ok=True)
    for f in ("torch.json", "torch_final.safetensors"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    hpcbench = os.environ["HPCBENCH_BIN"]
    cmd = (f"{hpcbench} run --strategy ddp --nproc-per-node {WORLD} {FLAGS} --results-dir {out}/runs "
           f"--run-name inputs-{os.getpid()} --save-initial-checkpoint {out}/initial "
           f"--dump-data {out}/data.safetensors")
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd}\nfailed:\n{r.stdout}\n{r.stderr}")
    torch.multiprocessing.spawn(worker, args=(out, free_port()), nprocs=WORLD, join=True)
    print(f"torch DDP reference written to {out}")


if __name__ == "__main__":
    main()
