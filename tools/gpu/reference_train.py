"""The Python references for tools/gpu/validate.sh: Hugging Face's
BertForQuestionAnswering trained in eager PyTorch, compiled with torch.compile
(default, reduce-overhead or max-autotune), under Lightning's Trainer or
sharded by FSDP2 at world size 1, on exactly the batches an hpcbench run
trained on. Several trainers in one call (--trainer eager,compile-default,...)
run one after the other in this process, each on a freshly initialised model
and each written to its own JSON as it finishes.

The batches come from the run's --dump-data file (the features and rank 0's
sample order), so both sides see the same sequence lengths and attention
masks: a padded batch cannot take SDPA's flash kernel, and which kernel each
side ran is recorded (asked of the dispatcher, torch._fused_sdp_choice, with
the first training call's own arguments, as hpcbench does in C++).

Same model configuration, sequence length, batch, precision, AdamW (decay on
all but biases and LayerNorm), gradient clipping at 1.0 and step count as the
hpcbench run. Step times are CUDA events around each whole step (data copy,
forward, backward, clipping, optimizer), warm-up steps excluded, median.

torch.compile compiles the model (forward, loss and, through AOTAutograd, its
backward), the way users write it; clipping and the fused AdamW stay eager.
Before the timed loop it runs COMPILE_WARM forward-backward passes on the first
batch with the gradients dropped and no optimizer step (so the weights, and the
losses that follow, are those of the eager run): tracing, Inductor's code
generation and, under reduce-overhead, the CUDA graph's warm-up run and
recording. Their wall time is compile_s, reported apart; the timed loop then
excludes its warm-up steps as every other side does.
MFU uses hpcbench's FLOP count (6*M*s + 12*L*h*s^2 per sample, M the weights
of the Linear layers: lib/train/flops.h) and its peak table."""
import argparse
import gc
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
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
}
SDPA_NAMES = {0: "math", 1: "flash_attention", 2: "efficient_attention", 3: "cudnn_attention", 4: "overrideable"}
TRAINERS = ("eager", "compile-default", "compile-reduce-overhead", "compile-max-autotune", "lightning", "fsdp2")
IMPL = {"eager": "hf-eager", "lightning": "lightning", "fsdp2": "fsdp2", "compile-default": "hf-compile-default",
        "compile-reduce-overhead": "hf-compile-reduce-overhead", "compile-max-autotune": "hf-compile-max-autotune"}
# reduce-overhead's CUDA graph trees run the compiled graph once to warm up, record it on
# the second call and replay from the third: three passes leave every mode warm.
COMPILE_WARM = 3


def peak_tflops(name, precision):
    rates = PEAK.get(name)
    return rates[("fp32", "tf32", "bf16", "fp16").index(precision)] if rates else 0.0


class SdpaProbe:
    """Wraps F.scaled_dot_product_attention (which transformers' sdpa
    attention calls through the module attribute) to record the dispatcher's
    choice for the first call made in training mode."""

    def __init__(self):
        self.choice = None
        self._orig = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = self

    def uninstall(self):
        """torch.compile traces the real function: Dynamo would break the graph at this
        wrapper's host-side query and attribute write."""
        F.scaled_dot_product_attention = self._orig

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
        if self.choice is None and torch.is_grad_enabled():
            c = torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal, scale=scale,
                                        enable_gqa=kw.get("enable_gqa", False))
            self.choice = SDPA_NAMES.get(int(c), f"error({int(c)})")
        return self._orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kw)


def load_batches(path, steps, batch):
    d = load_file(path)
    order = d["order_rank0"]  # [steps, grad_accum, rows]
    if order.shape[0] < steps:
        sys.exit(f"{path}: holds {order.shape[0]} steps' sample order, {steps} asked for")
    if order.shape[2] != batch:
        sys.exit(f"{path}: micro-batches of {order.shape[2]} rows, --batch {batch} asked for")
    batches = []
    for k in range(steps):
        idx = order[k, 0]
        idx = idx[idx >= 0].long()
        batches.append({n: d[n].index_select(0, idx).long().contiguous().pin_memory() if torch.cuda.is_available()
                        else d[n].index_select(0, idx).long().contiguous()
                        for n in ("input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions")})
    return batches


def param_groups(model):
    no_decay = ("bias", "LayerNorm.weight")
    return [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]


def make_model(a, dev):
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, attn_implementation="sdpa", hidden_dropout_prob=a.dropout,
                     attention_probs_dropout_prob=a.dropout, **PRESETS[a.model])
    return cfg, BertForQuestionAnswering(cfg).to(dev).train()


class Timer:
    """Per-step device times: CUDA events, read after the run (no extra sync
    per step); host clocks after the step's work on CPU."""

    def __init__(self, dev):
        self.cuda = dev.type == "cuda"
        self.pairs = []

    def start(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.pairs.append([e, None])
        else:
            self.pairs.append([time.perf_counter(), None])

    def stop(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.pairs[-1][1] = e
        else:
            self.pairs[-1][1] = time.perf_counter()

    def ms(self):
        if self.cuda:
            torch.cuda.synchronize()
            return [a.elapsed_time(b) for a, b in self.pairs]
        return [(b - a) * 1000.0 for a, b in self.pairs]


def run_eager(a, dev, batches, dtype):
    cfg, model = make_model(a, dev)
    opt = torch.optim.AdamW(param_groups(model), lr=5e-5, fused=dev.type == "cuda")
    scaler = torch.amp.GradScaler(dev.type, enabled=a.precision == "fp16")
    timer, losses = Timer(dev), []
    for b in batches:
        timer.start()
        x = {n: t.to(dev, non_blocking=True) for n, t in b.items()}
        with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
            out = model(**x)
        scaler.scale(out.loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        timer.stop()
        losses.append(out.loss.detach())
    return cfg, model, timer.ms(), [float(v) for v in losses]


def run_compile(a, dev, batches, dtype, mode, probe):
    """Hugging Face's model under torch.compile(mode=...). The SDPA kernel is asked of
    the dispatcher in one eager forward with the first batch (its arguments are the
    compiled graph's: AOTAutograd's trace asks the same dispatcher with the same shapes,
    dtypes and mask), then the probe is removed so that Dynamo traces torch's own
    function."""
    cfg, model = make_model(a, dev)
    x0 = {n: t.to(dev) for n, t in batches[0].items()}
    with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
        model(**x0)
    probe.uninstall()
    if dev.type == "cuda":
        # The probe's eager activations are no part of the compiled side's peak.
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    opt = torch.optim.AdamW(param_groups(model), lr=5e-5, fused=dev.type == "cuda")
    scaler = torch.amp.GradScaler(dev.type, enabled=a.precision == "fp16")
    cmodel = torch.compile(model, mode=None if mode == "default" else mode)
    graphs = mode in ("reduce-overhead", "max-autotune") and dev.type == "cuda"

    def forward_backward(x):
        """One forward and backward; returns a copy of the loss. The warm-up and the timed
        steps both go through here so that every tensor lives exactly as long in both: CUDA
        graph trees record a graph during the warm-up and check on each replay that the same
        tensors are alive (the first GPU run kept the timed step's outputs alive through its
        backward, dead in the warm-up's, and the trees refused the replay)."""
        if graphs:
            # A new iteration: the CUDA graph trees may reuse the last replay's outputs.
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
            out = cmodel(**x)
        scaler.scale(out.loss).backward()
        # A copy: the loss of a CUDA graph replay lives in the graph's memory, which the
        # next replay overwrites.
        return out.loss.detach().clone()

    warm_s = []
    for _ in range(COMPILE_WARM):
        t0 = time.perf_counter()
        forward_backward(x0)
        opt.zero_grad(set_to_none=True)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        warm_s.append(time.perf_counter() - t0)
    timer, losses = Timer(dev), []
    for b in batches:
        timer.start()
        x = {n: t.to(dev, non_blocking=True) for n, t in b.items()}
        losses.append(forward_backward(x))
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        timer.stop()
    extra = {"compile_mode": mode, "compile_s": sum(warm_s), "compile_warm_steps_s": warm_s,
             "cuda_graphs": graphs, "cudagraph_trees": graphs and torch._inductor.config.triton.cudagraph_trees}
    return cfg, model, timer.ms(), [float(v) for v in losses], extra


FSDP2_CONFIG = {}


def run_fsdp2(a, dev, batches, dtype):
    """PyTorch's FSDP2 on one rank (NCCL on a GPU, Gloo on CPU), configured as hpcbench's
    `zero --zero-stage 3` and `fsdp --sharding full` run under --precision bf16/fp16, so that
    its overhead over eager is theirs to be compared with (docs/gpu.md, "FSDP2 and hpcbench's
    sharded strategies"):
    - units: the embeddings, each encoder layer and the QA head, each resharded after forward
      (hpcbench reshards its last unit too); the root then holds no parameter of its own;
    - fp32 parameters sharded, gathered as compute-dtype copies (param_dtype), gradients
      reduced in --reduce-dtype (default the compute dtype, hpcbench's default) and
      accumulated in fp32 on the shard;
    - forward under autocast in the compute dtype, as hpcbench's unfused sharded step runs
      over its compute copies: LayerNorm, softmax and the loss in fp32, as on the eager side;
    - fused AdamW over the fp32 shards, clipping at 1.0, the same batches.
    At world size 1 its collectives still run, so its step over the eager one is FSDP2's own
    overhead: the reference for hpcbench's fsdp full and zero 3 at --keep-collectives."""
    import os
    import socket

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    if dev.type == "cuda":
        # "cuda" names no index, which set_device refuses: the current device.
        dev = torch.device("cuda", torch.cuda.current_device() if dev.index is None else dev.index)
        torch.cuda.set_device(dev)
    dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=0, world_size=1)
    try:
        cfg, model = make_model(a, dev)
        mesh = init_device_mesh(dev.type, (1,))
        reduce = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(a.reduce_dtype, dtype)
        mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=reduce) if dtype is not None else MixedPrecisionPolicy()
        units = [model.bert.embeddings, *model.bert.encoder.layer, model.qa_outputs]
        for unit in units:
            fully_shard(unit, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
        fully_shard(model, mesh=mesh, mp_policy=mp)
        root_params = [n for n, p in model.named_parameters()
                       if not any(p is q for u in units for q in u.parameters())]
        # Stated in the results, so that the overhead it is compared with has its settings beside it.
        FSDP2_CONFIG.update({
            "units": f"the embeddings, {len(model.bert.encoder.layer)} encoder layers, the QA head; the root holds "
                     f"{len(root_params)} parameters of its own",
            "reshard_after_forward": "every unit, the QA head included", "world_size": 1, "backend": dist.get_backend(),
            "mp_policy": {"param_dtype": str(mp.param_dtype), "reduce_dtype": str(mp.reduce_dtype),
                          "output_dtype": str(mp.output_dtype), "cast_forward_inputs": mp.cast_forward_inputs},
            "autocast": str(dtype) if dtype is not None else False,
            "optimizer": "AdamW (fused on CUDA) over the sharded fp32 parameters, clipping at 1.0",
            "as_hpcbench": f"--strategy zero --zero-stage 3 / --strategy fsdp --sharding full, --precision "
                           f"{a.precision}, --reduce-dtype {a.reduce_dtype or 'the compute dtype'}, --keep-collectives",
            "why_overhead_at_world_size_1": "each unit still all-gathers its parameters (a copy at one rank) "
            "as compute-dtype copies before forward and again before backward (resharded after forward), and "
            "reduce-scatters its gradients: work eager does not do; hpcbench's fsdp full and zero 3 do the same "
            "work under --keep-collectives, which is what makes them comparable"})
        opt = torch.optim.AdamW(param_groups(model), lr=5e-5, fused=dev.type == "cuda")
        scaler = torch.amp.GradScaler(dev.type, enabled=a.precision == "fp16")
        timer, losses = Timer(dev), []
        for b in batches:
            timer.start()
            x = {n: t.to(dev, non_blocking=True) for n, t in b.items()}
            with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
                out = model(**x)
            scaler.scale(out.loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            timer.stop()
            losses.append(out.loss.detach())
        times = timer.ms()
    finally:
        dist.destroy_process_group()
    return cfg, model, times, [float(v) for v in losses]


def run_lightning(a, dev, batches, dtype):
    import lightning as L

    cfg, model = make_model(a, dev)
    timer, losses = Timer(dev), []

    class QA(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def training_step(self, batch, _):
            out = self.model(**batch)
            losses.append(out.loss.detach())
            return out.loss

        def configure_optimizers(self):
            # Lightning refuses gradient_clip_val with a fused optimizer ("performs unscaling of
            # gradients internally"; the first GPU run hit it), so its users run torch's default
            # AdamW (foreach on CUDA), built the same on every device so that --dry checks it.
            return torch.optim.AdamW(param_groups(self.model), lr=5e-5)

        def on_train_batch_start(self, batch, batch_idx):
            timer.start()

        def on_train_batch_end(self, outputs, batch, batch_idx):
            timer.stop()

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]

    precision = {"fp32": "32-true", "tf32": "32-true", "bf16": "bf16-mixed", "fp16": "16-mixed"}[a.precision]
    trainer = L.Trainer(accelerator="gpu" if dev.type == "cuda" else "cpu", devices=1, precision=precision,
                        max_steps=len(batches), gradient_clip_val=1.0, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    loader = torch.utils.data.DataLoader(Batches(), batch_size=None, shuffle=False, num_workers=0,
                                         pin_memory=dev.type == "cuda")
    # Lightning copies the batch to the device before on_train_batch_start, so its step
    # times leave out the host-to-device copy that the other two sides include (about
    # 0.5 MB a batch of 32 x 384: microseconds on a GPU).
    trainer.fit(QA(), loader)
    return cfg, model, timer.ms(), [float(v) for v in losses]


def trainers_of(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in TRAINERS]
    if not names or bad:
        sys.exit(f"--trainer {text}: unknown {', '.join(bad) or '(none given)'}; use a comma-separated list of "
                 f"{', '.join(TRAINERS)}")
    return names


def run_one(a, trainer, dev, batches, dtype, out_path):
    probe = SdpaProbe()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    extra = {}
    try:
        if trainer.startswith("compile-"):
            mode = trainer[len("compile-"):]
            try:
                cfg, model, times, losses, extra = run_compile(a, dev, batches, dtype, mode, probe)
            except RuntimeError as e:
                # PyTorch's open bug #154306: CUDA graph trees refuse a replay when they saw a
                # tensor die during recording that is alive at the replay. The same mode then
                # runs with one CUDA graph per compiled function (trees off), said in its JSON.
                if "graph recording observed" not in str(e) or not torch._inductor.config.triton.cudagraph_trees:
                    raise
                print(f"compile-{mode}: CUDA graph trees failed ({e}); again with cudagraph_trees off", flush=True)
                torch._dynamo.reset()
                torch._inductor.config.triton.cudagraph_trees = False
                try:
                    cfg, model, times, losses, extra = run_compile(a, dev, batches, dtype, mode, probe)
                finally:
                    torch._inductor.config.triton.cudagraph_trees = True
                extra["cudagraph_trees_error"] = str(e)[:300]
        else:
            cfg, model, times, losses = {"eager": run_eager, "lightning": run_lightning, "fsdp2": run_fsdp2}[trainer](
                a, dev, batches, dtype)
    finally:
        probe.uninstall()
    timed = times[a.warmup:]
    # FSDP2's parameters are DTensors: count the global shapes (world size 1 holds them whole anyway).
    matmul_weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    L_, h, s = cfg.num_hidden_layers, cfg.hidden_size, batches[0]["input_ids"].shape[1]
    flops = 6 * matmul_weights * s + 12 * L_ * h * s * s
    med = statistics.median(timed)
    sps = a.batch * 1000.0 / med
    name = torch.cuda.get_device_name() if dev.type == "cuda" else "cpu"
    peak = peak_tflops(name, a.precision)
    res = {"impl": IMPL[trainer], "device": name,
           "model": a.model, "dropout": a.dropout,
           "seq": s, "batch": a.batch, "precision": a.precision, "steps": a.steps, "warmup": a.warmup,
           "step_ms_median": med, "samples_per_s": sps, "mfu": sps * flops / (peak * 1e12) if peak else 0.0,
           "sdpa_backend": probe.choice or "none", "losses": losses,
           # As hpcbench's columns (results/README.md): what the device held
           # (the allocator's reserved peak), then the live tensors' peak.
           "peak_memory_bytes": torch.cuda.max_memory_reserved() if dev.type == "cuda" else 0,
           "peak_allocated_bytes": torch.cuda.max_memory_allocated() if dev.type == "cuda" else 0,
           "torch": torch.__version__, **extra}
    if trainer == "fsdp2":
        res["fsdp2_config"] = FSDP2_CONFIG
    if trainer == "lightning":
        import lightning
        res["lightning"] = lightning.__version__
    import transformers
    res["transformers"] = transformers.__version__
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    ctime = f", compile {res['compile_s']:.1f} s apart" if "compile_s" in res else ""
    print(f"{res['impl']:<10} {name}: {a.model} seq {s} batch {a.batch} {a.precision}: {med:.2f} ms/step, "
          f"{sps:.1f} samples/s, MFU {100 * res['mfu']:.1f}%, SDPA {res['sdpa_backend']}{ctime}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trainer", default="eager",
                    help=f"one or several (comma-separated, run in this order) of {', '.join(TRAINERS)}; "
                         "compile-max-autotune takes minutes to compile")
    ap.add_argument("--model", default="bert-base-uncased", choices=sorted(PRESETS))
    ap.add_argument("--data", required=True, help="an hpcbench run's --dump-data file")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--precision", default="bf16", choices=["fp32", "tf32", "bf16", "fp16"])
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dropout", type=float, default=0.1, help="BertConfig's hidden and attention dropout")
    ap.add_argument("--reduce-dtype", default="", choices=["", "fp32", "bf16", "fp16"],
                    help="fsdp2: the gradient reduction's dtype (default the compute dtype, as hpcbench's --reduce-dtype)")
    ap.add_argument("--json-out", required=True,
                    help="the result's JSON; with several trainers a name holding {trainer}, one file each")
    a = ap.parse_args()
    if a.warmup >= a.steps:
        sys.exit(f"--warmup {a.warmup} must be less than --steps {a.steps}")
    trainers = trainers_of(a.trainer)
    if len(trainers) > 1 and "{trainer}" not in a.json_out:
        sys.exit(f"--json-out {a.json_out}: with several trainers ({a.trainer}) it must hold {{trainer}}")

    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    if a.precision == "tf32":
        torch.set_float32_matmul_precision("high")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    batches = load_batches(a.data, a.steps, a.batch)
    failed = []
    for trainer in trainers:
        out_path = a.json_out.replace("{trainer}", trainer)
        try:
            run_one(a, trainer, dev, batches, dtype, out_path)
        except Exception as e:  # noqa: BLE001 - one trainer failing must not cost the others' figures
            import traceback

            traceback.print_exc()
            failed.append(trainer)
            with open(out_path, "w") as f:
                json.dump({"impl": IMPL[trainer], "batch": a.batch, "error": f"{type(e).__name__}: {e}"}, f, indent=1)
        gc.collect()
        if trainer.startswith("compile-"):
            # The next compiled trainer compiles afresh, as a user's separate process would
            # (Inductor's on-disk caches stay, as they would for that user too).
            torch._dynamo.reset()
    if failed:
        sys.exit(f"reference_train.py: {', '.join(failed)} failed (see above)")


if __name__ == "__main__":
    main()
