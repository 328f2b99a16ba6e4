"""Hugging Face BertForQuestionAnswering trained in eager PyTorch on the GPU,
the reference for the baseline figures of tools/gpu/baseline-gpu.sh: same
model configuration, sequence length, batch, precision (autocast), AdamW
and step count as the hpcbench run; CUDA-event step times, warm-up steps
excluded, median. Prints samples/s and MFU with hpcbench's FLOP count
(6*M*s + 12*L*h*s^2, M the weights of the model's Linear layers: see
lib/train/flops.h) and, given --hpcbench-run, the ratio."""
import argparse
import csv
import json
import statistics

import torch
from transformers import BertConfig, BertForQuestionAnswering

PRESETS = {
    "bert-base-uncased": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "bert-large-uncased": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "bert-tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
}
# Dense fp32, tf32, bf16, fp16 TFLOP/s by exact CUDA device name: lib/train/flops.cpp's
# table (with its datasheet sources), so that both sides divide by the same peak.
A100 = (19.5, 156.0, 312.0, 312.0)
H100_SXM = (67.0, 494.7, 989.4, 989.4)
H100_NVL = (60.0, 417.5, 835.5, 835.5)
PEAK = {
    "NVIDIA A100-SXM4-40GB": A100,
    "NVIDIA A100-SXM4-80GB": A100,
    "NVIDIA A100-PCIE-40GB": A100,
    "NVIDIA A100 80GB PCIe": A100,
    "NVIDIA H100 80GB HBM3": H100_SXM,
    "NVIDIA H100 PCIe": (51.0, 378.0, 756.0, 756.0),
    "NVIDIA H100 NVL": H100_NVL,
    "NVIDIA H200": H100_SXM,
    "NVIDIA H200 NVL": H100_NVL,
    "NVIDIA L40S": (91.6, 183.0, 362.05, 362.05),
    "Tesla V100-SXM2-16GB": (15.7, 15.7, 0.0, 125.0),
    "Tesla V100-SXM2-32GB": (15.7, 15.7, 0.0, 125.0),
    "Tesla V100-PCIE-16GB": (14.0, 14.0, 0.0, 112.0),
    "Tesla V100-PCIE-32GB": (14.0, 14.0, 0.0, 112.0),
    "Tesla V100S-PCIE-32GB": (16.4, 16.4, 0.0, 130.0),
}


def peak_tflops(name, precision):
    rates = PEAK.get(name)
    return rates[("fp32", "tf32", "bf16", "fp16").index(precision)] if rates else 0.0


def mfu_text(mfu):
    """0 means no known peak for the device and precision, not an idle GPU."""
    return f"{100 * mfu:.1f}%" if mfu > 0 else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="bert-base-uncased")
    ap.add_argument("--seq", type=int, default=384)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--precision", default="bf16", choices=["fp32", "tf32", "bf16", "fp16"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--hpcbench-run", help="the hpcbench run folder to compare with")
    ap.add_argument("--json-out")
    a = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    cfg = BertConfig(vocab_size=30522, attn_implementation="sdpa", **PRESETS[a.model])
    model = BertForQuestionAnswering(cfg).to(dev).train()
    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=5e-5)
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    ids = torch.randint(1000, 30000, (a.batch, a.seq), device=dev)
    types = torch.zeros_like(ids)
    mask = torch.ones_like(ids)
    start = torch.randint(1, a.seq, (a.batch,), device=dev)
    end = torch.clamp(start + 3, max=a.seq - 1)

    times = []
    for step in range(a.steps):
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            out = model(input_ids=ids, token_type_ids=types, attention_mask=mask,
                        start_positions=start, end_positions=end)
        scaler.scale(out.loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        t1.record()
        t1.synchronize()
        if step >= a.warmup:
            times.append(t0.elapsed_time(t1))
    matmul_weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    L, h, s = cfg.num_hidden_layers, cfg.hidden_size, a.seq
    flops = 6 * matmul_weights * s + 12 * L * h * s * s
    med = statistics.median(times)
    sps = a.batch * 1000.0 / med
    name = torch.cuda.get_device_name()
    peak = peak_tflops(name, a.precision)
    mfu = sps * flops / (peak * 1e12) if peak else 0.0
    res = {"device": name, "model": a.model, "seq": s, "batch": a.batch, "precision": a.precision,
           "step_ms_median": med, "samples_per_s": sps, "mfu": mfu}
    print(f"HF eager   {name}: {a.model} seq {s} batch {a.batch} {a.precision}: "
          f"{med:.2f} ms/step, {sps:.1f} samples/s, MFU {mfu_text(mfu)}")
    if a.hpcbench_run:
        with open(f"{a.hpcbench_run}/summary.csv") as f:
            row = next(csv.DictReader(f))
        ours = float(row["samples_per_s"])
        print(f"hpcbench   {row['device_name']}: {float(row['step_ms_median']):.2f} ms/step, {ours:.1f} samples/s, "
              f"MFU {mfu_text(float(row['mfu']))}")
        print(f"ratio hpcbench / HF eager (samples/s): {ours / sps:.3f}")
        res["hpcbench_samples_per_s"] = ours
        res["ratio"] = ours / sps
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
