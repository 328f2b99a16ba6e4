"""One full training step (forward, backward, clip_grad_norm_, AdamW, linear
schedule) of our BertForQuestionAnswering (bench_train_step, C++) against
Hugging Face's in Python eager mode, on the same CPU, in the same run, with
the same intra-op thread count and shapes. Both in train mode (dropout 0.1),
fp32, the Trainer's AdamW parameter groups and its default optimizer for
torch >= 2.8 ("adamw_torch_fused": torch.optim.AdamW(fused=True), the same
fused ATen kernel hpcbench steps with); warm-up steps excluded; the median
step is reported.

    V=/root/.cache/hpcbench/venv-9d1d7d1a288d
    $V/bin/python bench/bench_train_step.py --bin build/bench/bench_train_step \
        [--threads 1] [--steps 20] [--warmup 3] [--cases tiny,base]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# hpcbench keeps freed blocks in glibc's heap (lib/core/host_allocator.h);
# both sides get the same setting, through the environment, so that page
# faults on re-allocated gradients favour neither. glibc reads it at start-up:
# set it and start again.
if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
    os.environ["MALLOC_MMAP_THRESHOLD_"] = os.environ["MALLOC_TRIM_THRESHOLD_"] = str(1 << 30)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch
from transformers import BertConfig, BertForQuestionAnswering
from transformers.optimization import get_linear_schedule_with_warmup
from transformers.trainer_pt_utils import get_parameter_names

PRESETS = {
    "bert-tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
    "bert-base-uncased": dict(),
}
CASES = {"tiny": ("bert-tiny", 8, 128), "base": ("bert-base-uncased", 2, 128)}


def hf_steps(preset, batch, seq, steps, warmup):
    torch.manual_seed(0)
    cfg = BertConfig(**PRESETS[preset])
    model = BertForQuestionAnswering(cfg)  # sdpa attention, transformers' default
    model.train()
    decay = set(get_parameter_names(model, [torch.nn.LayerNorm], ["bias", "layernorm", "rmsnorm"]))
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=5e-5, betas=(0.9, 0.999), eps=1e-8, fused=True)
    sched = get_linear_schedule_with_warmup(opt, 0, warmup + steps + 1)
    ids = torch.randint(1, cfg.vocab_size, (batch, seq))
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2 :] = 1
    mask = torch.ones(batch, seq, dtype=torch.long)
    start = torch.randint(0, seq, (batch,))
    end = (start + 3).clamp(max=seq - 1)
    ms, fwd, bwd = [], [], []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask, start_positions=start,
                     end_positions=end).loss
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if s >= warmup:
            ms.append(1000 * (time.perf_counter() - t0))
            fwd.append(1000 * (t1 - t0))
            bwd.append(1000 * (t2 - t1))
    return {"median_ms": statistics.median(ms), "forward_ms": statistics.median(fwd),
            "backward_ms": statistics.median(bwd)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the bench_train_step executable")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cases", default="tiny,base")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for case in args.cases.split(","):
        preset, batch, seq = CASES[case]
        cmd = [args.bin, "--model", preset, "--batch", str(batch), "--seq", str(seq), "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--threads", str(args.threads)]
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        ours = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
        hf = hf_steps(preset, batch, seq, args.steps, args.warmup)
        rows.append((preset, batch, seq, ours, hf))
    print(f"training step, fp32 CPU, {args.threads} thread(s), median of {args.steps} steps after {args.warmup} warm-up")
    print(f"{'model':<20}{'batch':>6}{'seq':>5}{'hpcbench ms':>13}{'HF eager ms':>13}{'HF/ours':>9}"
          f"{'fwd ours/HF':>16}{'bwd ours/HF':>16}")
    for preset, batch, seq, ours, hf in rows:
        print(f"{preset:<20}{batch:>6}{seq:>5}{ours['median_ms']:>13.1f}{hf['median_ms']:>13.1f}"
              f"{hf['median_ms'] / ours['median_ms']:>9.2f}"
              f"{ours['forward_ms']:>8.1f}/{hf['forward_ms']:<7.1f}{ours['backward_ms']:>8.1f}/{hf['backward_ms']:<7.1f}")


if __name__ == "__main__":
    main()
