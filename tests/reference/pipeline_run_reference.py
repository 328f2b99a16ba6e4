"""torch.distributed.pipelining (Schedule1F1B, ScheduleGPipe) training the
data and initial weights of an hpcbench pipeline run, 2 Gloo CPU ranks, for
tests/strategies/test_pipeline_parity.cpp's run-level check.

hpcbench supplies only the inputs: the synthetic training features, the
initial weights (a Hugging Face folder) and its sample order (one data rank:
the pipeline's stages read the same rows). The stages are
pipeline_reference.py's (transformers' modules, cut as hpcbench cuts them);
each stage steps its own parameters with the Trainer's AdamW groups and
linear schedule, after clipping by the norm over the whole pipeline (the
stages' squared norms all-reduced), as clip_grad_norm_ over the whole model
would. Writes $HPCBENCH_REF_DIR/pipeline_run/{initial/,torch_<schedule>_rank<r>.safetensors,
torch_<schedule>.json}.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from ddp_reference import decays, free_port, hpcbench_flags
from pipeline_reference import Stage, balanced, prefixed, qa_loss

STAGES = 2
MICRO = 2
STEPS = 5
BATCH = 4
SCHEDULES = ("1f1b", "gpipe")
SETTINGS = dict(seed=11, lr=5e-4, eps=1e-6, weight_decay=0.01, warmup_ratio=0.4, max_grad_norm=1.0,
                samples=48, seq=64)
FLAGS = hpcbench_flags(SETTINGS, STEPS, BATCH) + f" --precision fp32 --micro-batches {MICRO}"


def worker(rank, out, port):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    from transformers import BertForQuestionAnswering, get_linear_schedule_with_warmup

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=STAGES)
    data = load_file(os.path.join(out, "data.safetensors"))
    order = data["order_rank0"]  # [steps, accum, rows]: every stage reads the same rows
    if order.shape != (STEPS, 1, BATCH):
        raise SystemExit(f"hpcbench's sample order has shape {tuple(order.shape)}, not {(STEPS, 1, BATCH)}")
    for schedule in SCHEDULES:
        model = BertForQuestionAnswering.from_pretrained(os.path.join(out, "initial"), attn_implementation="sdpa",
                                                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        model.train()
        layers = balanced(model.config.num_hidden_layers, STAGES)[rank]
        first, last = rank == 0, rank == STAGES - 1
        rows = BATCH // MICRO
        module = Stage(model, layers, first, last, [], [])
        seq = data["input_ids"].shape[1]
        hidden = torch.zeros(rows, seq, model.config.hidden_size)
        inputs = (data["input_ids"][:rows], data["token_type_ids"][:rows]) if first else (hidden,)
        outputs = torch.zeros(rows, seq, 2) if last else hidden
        stage = PipelineStage(module, rank, STAGES, torch.device("cpu"), input_args=inputs, output_args=outputs)
        kind = Schedule1F1B if schedule == "1f1b" else ScheduleGPipe
        sched = kind(stage, n_microbatches=MICRO, loss_fn=qa_loss)
        named = list(prefixed(module, layers))
        groups = [{"params": [p for k, p in named if decays(k)], "weight_decay": SETTINGS["weight_decay"]},
                  {"params": [p for k, p in named if not decays(k)], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=SETTINGS["lr"], eps=SETTINGS["eps"])
        lr_sched = get_linear_schedule_with_warmup(opt, math.ceil(SETTINGS["warmup_ratio"] * STEPS), STEPS)
        step_losses = []
        for step in range(STEPS):
            idx = order[step, 0]
            batch = {k: data[k][idx] for k in ("input_ids", "token_type_ids", "attention_mask", "start_positions",
                                               "end_positions")}
            module.calls = 0
            module.masks = list(batch["attention_mask"].split(rows))
            target = torch.stack([batch["start_positions"], batch["end_positions"]], dim=1)
            losses = []
            if first:
                sched.step(batch["input_ids"], batch["token_type_ids"])
            elif last:
                sched.step(target=target, losses=losses)
            grads = [p.grad for _, p in named if p.grad is not None]
            sq = torch.stack([g.norm(2) for g in grads]).pow(2).sum().reshape(1)
            dist.all_reduce(sq)
            coef = (SETTINGS["max_grad_norm"] / (sq.sqrt() + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(coef)
            opt.step()
            lr_sched.step()
            opt.zero_grad(set_to_none=True)
            mean = torch.stack([l.detach() for l in losses]).mean().reshape(1) if last else torch.zeros(1)
            dist.all_reduce(mean)
            step_losses.append(mean.item())
        save_file({k: p.detach().contiguous() for k, p in named},
                  os.path.join(out, f"torch_{schedule}_rank{rank}.safetensors"))
        if rank == 0:
            with open(os.path.join(out, f"torch_{schedule}.json"), "w") as f:
                json.dump({"losses": step_losses, "flags": FLAGS, "stages": STAGES, "steps": STEPS}, f, indent=1)
        dist.barrier()
    dist.destroy_process_group()


def main():
    out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "pipeline_run")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.startswith("torch_"):
            os.remove(os.path.join(out, f))
    hpcbench = os.environ["HPCBENCH_BIN"]
    cmd = (f"{hpcbench} run --strategy pipeline --nproc-per-node {STAGES} {FLAGS} --results-dir {out}/runs "
           f"--run-name inputs-{os.getpid()} --save-initial-checkpoint {out}/initial "
           f"--dump-data {out}/data.safetensors")
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd}\nfailed:\n{r.stdout}\n{r.stderr}")
    torch.multiprocessing.spawn(worker, args=(out, free_port()), nprocs=STAGES, join=True)
    print(f"torch.distributed.pipelining run reference written to {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
