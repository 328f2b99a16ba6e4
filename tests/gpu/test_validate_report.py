"""tools/gpu/validate_report.py against what the first GPU run found:

- the ratios to the references compare like with like: batch / median step on both sides
  (hpcbench's own samples_per_s divides by the timed steps' total time, which a few slow
  steps pull down; the references report the median);
- a phase that left no rows (its reference runs failed) still renders in the summary
  instead of ending it with an IndexError;
- the summary of every committed GPU results folder renders, with the versions line.

Usage: test_validate_report.py REPO_ROOT"""
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
script = os.path.join(root, "tools", "gpu", "validate_report.py")
spec = importlib.util.spec_from_file_location("validate_report", script)
vr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vr)


def fig(sps, median, mfu=0.2):
    return {"samples_per_s": sps, "step_ms_median": median, "mfu": mfu, "peak_memory_bytes": 1 << 30,
            "sdpa_backend": "math", "utilisation_mean_percent": -1}


# Mean-based 900 samples/s, median step 32 ms (1000 samples/s by the median); the reference's
# 800 samples/s is by its median: the ratio must be 1000 / 800, not 900 / 800.
row = {"batch": 32, "hpcbench": fig(900.0, 32.0), "hf_eager": fig(800.0, 40.0), "lightning": fig(500.0, 64.0)}
j = vr.derive_baseline({"rows": [row]})
assert abs(row["ratio_hf_eager"] - 1.25) < 1e-12, row["ratio_hf_eager"]
assert abs(row["ratio_lightning"] - 2.0) < 1e-12, row["ratio_lightning"]
names = [t["name"] for t in j["targets"]]
assert "batch 32: bf16 MFU >= 45 %" in names and not j["targets"][-1]["ok"], j["targets"]
p = vr.derive_precision({"rows": [{"precision": "bf16", "batch": 32, "hpcbench": fig(900.0, 32.0),
                                   "hf_eager": fig(800.0, 40.0)}]})
assert abs(p["rows"][0]["ratio_hf_eager"] - 1.25) < 1e-12, p

with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "baseline.json"), "w") as f:
        json.dump({"phase": "baseline", "failed": True, "rows": [], "checks": [
            vr.check("batch 32: runs present", False, "FileNotFoundError: ref-lightning-bf16-b32.json")]}, f)
    out = subprocess.run([sys.executable, script, "summary", d, "--out", os.path.join(d, "summary.md")],
                         capture_output=True, text=True)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1, (out.returncode, out.stderr)  # a failed check fails the summary
    text = open(os.path.join(d, "summary.md")).read()
    assert "## baseline — FAILED" in text and "FAILED: batch 32: runs present" in text, text

folders = sorted(glob.glob(os.path.join(root, "results", "reference", "gpu", "*")))
assert folders, "no committed GPU results under results/reference/gpu"
for folder in folders:
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, script, "summary", folder, "--out", os.path.join(d, "summary.md")],
                             capture_output=True, text=True)
        assert "Traceback" not in out.stderr, (folder, out.stderr)
        text = open(os.path.join(d, "summary.md")).read()
        assert "| device | driver | CUDA | NCCL | torch |" in text, folder
        with open(os.path.join(folder, "baseline.json")) as f:
            base = json.load(f)
        for r in base["rows"]:
            want = r["batch"] * 1000.0 / r["hpcbench"]["step_ms_median"] / r["hf_eager"]["samples_per_s"]
            assert abs(r["ratio_hf_eager"] - want) < 1e-9, (folder, r["batch"], r["ratio_hf_eager"], want)
print(f"validate_report: ratios by the median, empty phases rendered, {len(folders)} committed folder(s) summarised")
