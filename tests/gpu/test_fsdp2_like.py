"""The strategies phase's FSDP2 reference is configured as hpcbench's zero 3 / fsdp full, and
validate_report.py compares their overheads only when it is:

- tools/gpu/reference_train.py's FSDP2 run (bert-tiny, bf16, on this CPU over Gloo) records a
  configuration that validate_report.fsdp2_mismatches finds equal to zero 3's and fsdp full's
  settings as run.json writes them (precision bf16, strategy_options "stage=3,reduce=bf16" /
  "sharding=full,reduce=bf16");
- its losses follow Hugging Face eager's on the same batches within 1e-3 (both under bf16
  autocast: the loss in fp32); the configuration it replaced (bf16 parameters, no autocast)
  rounded the loss itself to bf16, 2.4e-3 off at the first step;
- a reduce dtype other than hpcbench's, the configuration it replaced, and a record without
  any configuration (the second H100 table's) are each found unlike (validate_report.py then
  fails the "configured alike" check and the overhead target as not comparable).

Usage: test_fsdp2_like.py REPO_ROOT"""
import importlib.util
import json
import os
import sys
import types

import torch

root = sys.argv[1]
gpu = os.path.join(root, "tools", "gpu")
sys.path.insert(0, gpu)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(gpu, f"{name}.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


ref = load("reference_train")
report = load("validate_report")

g = torch.Generator().manual_seed(0)
batches = [{"input_ids": torch.randint(0, 30522, (2, 64), generator=g), "token_type_ids": torch.zeros(2, 64, dtype=torch.long),
            "attention_mask": torch.ones(2, 64, dtype=torch.long), "start_positions": torch.tensor([3, 5]),
            "end_positions": torch.tensor([4, 9])} for _ in range(4)]


def fsdp2(reduce_dtype):
    a = types.SimpleNamespace(model="bert-tiny", dropout=0.0, precision="bf16", reduce_dtype=reduce_dtype, batch=2)
    ref.FSDP2_CONFIG.clear()
    _, _, _, losses = ref.run_fsdp2(a, torch.device("cpu"), batches, torch.bfloat16)
    return dict(ref.FSDP2_CONFIG), losses


cfg, losses = fsdp2("")
a = types.SimpleNamespace(model="bert-tiny", dropout=0.0, precision="bf16", batch=2)
_, _, _, eager = ref.run_eager(a, torch.device("cpu"), batches, torch.bfloat16)

# 1. Alike, for both of hpcbench's strategies.
for options in ("stage=3,reduce=bf16", "sharding=full,reduce=bf16"):
    off = report.fsdp2_mismatches(cfg, "bf16", options)
    assert off == [], (options, off, cfg)

# 2. The same numerics as eager: the loss in fp32 under autocast, not rounded to bf16.
d = report.max_rel_diff(losses, eager)
assert d <= 1e-3, (d, losses, eager)

# 3. Unlike: another reduce dtype, the configuration it replaced, none recorded.
cfg32, _ = fsdp2("fp32")
assert any(m.startswith("reduce_dtype torch.float32") for m in report.fsdp2_mismatches(cfg32, "bf16", "stage=3,reduce=bf16"))
old = {"units": "12 encoder layers, the embeddings, the root", "reshard_after_forward": True, "world_size": 1,
       "backend": "nccl", "mp_policy": {"param_dtype": "torch.bfloat16", "reduce_dtype": "torch.bfloat16",
                                        "output_dtype": "None", "cast_forward_inputs": True}, "autocast": False}
off = report.fsdp2_mismatches(old, "bf16", "stage=3,reduce=bf16")
assert [m.split(" ")[0] for m in off] == ["autocast", "units", "reshard"], off
recorded = json.load(open(os.path.join(root, "results", "reference", "gpu", "H100-80GB-HBM3-20261127", "call2",
                                       "strategies.json")))["fsdp2_reference"]
assert report.fsdp2_mismatches(recorded.get("config", "not recorded"), "bf16", "stage=3,reduce=bf16")

print(f"fsdp2: configured as zero 3 / fsdp full (no mismatch); losses within {d:.1e} of eager's; "
      "another reduce dtype, the old configuration and a record without one found unlike")
