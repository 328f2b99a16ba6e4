"""tools/gpu/validate_report.py against what the first GPU run found:

- the ratios to the references compare like with like: batch / median step on both sides
  (hpcbench's own samples_per_s divides by the timed steps' total time, which a few slow
  steps pull down; the references report the median);
- a phase that left no rows (its reference runs failed) still renders in the summary
  instead of ending it with an IndexError;
- the summary of every committed GPU results folder renders, with the versions line;
- the engine phase's summariser (a unit test of validate_report.py only, on a fabricated
  engine.json: no GPU figure is checked here): ratios to HF eager and to the best compile
  mode, the graphed and fused loss checks at their tolerances, issue 31's targets met and
  not met, and the engine table in summary.md.
- the adamw phase's summariser (tools/gpu/adamw_report.py) on two recorded CPU outputs of
  bench_kernels --adamw (tests/gpu/recorded: `bench_kernels --adamw`, exit 0, and
  `bench_kernels --adamw --inject-wrong-element`, exit 1: one element of the master 2 tol x rms
  off): the passing one summarised with its worst element error and the timing's ratio, the
  one wrong element failing the summary; a passing file edited to hold one element over
  tolerance fails though its verdict says passed; a GPU-shaped output (kernel rows, a fact,
  the kernel timed) read the same way.

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

# --- The engine phase's summariser, on fabricated figures (a unit test of the summariser only).
def side(sps, ms, losses, mfu=0.0, compile_s=None):
    v = {"samples_per_s": sps, "step_ms_median": ms, "mfu": mfu, "peak_memory_bytes": 3 << 30,
         "sdpa_backend": "cudnn_attention", "losses": losses}
    if compile_s is not None:
        v["compile_s"] = compile_s
    return v


eager_l = [4.0, 3.9, 3.8, 3.7]
engine = {"phase": "engine", "kernels": {"status": "passed", "seconds": 3}, "checks": [], "rows": [
    {"batch": 8, "eager_repeat_losses": [x * (1 + 2e-6) for x in eager_l], "sides": {
        "hb-eager": side(280.0, 28.6, eager_l),
        "hb-graph": side(700.0, 11.4, [x * (1 + 5e-6) for x in eager_l]),       # within 1e-5
        "hb-graph-fused": side(900.0, 8.9, [x * (1 - 1.5e-3) for x in eager_l]),  # within 2e-3
        "hf-eager": side(270.0, 29.6, eager_l),
        "hf-compile-default": side(350.0, 22.9, eager_l, compile_s=41.0),
        "hf-compile-reduce-overhead": side(800.0, 10.0, eager_l, compile_s=55.0),
        "lightning": side(160.0, 50.0, eager_l)}},
    {"batch": 32, "sides": {
        "hb-eager": side(940.0, 34.0, eager_l),
        "hb-graph": side(960.0, 33.3, [x * (1 + 3e-5) for x in eager_l]),       # outside 1e-5: a failed check
        "hb-graph-fused": side(1300.0, 24.6, [x * (1 + 3e-3) for x in eager_l], mfu=0.28),  # outside 2e-3
        "hf-eager": side(900.0, 35.5, eager_l),
        "hf-compile-default": side(1200.0, 26.7, eager_l, compile_s=40.0),
        "hf-compile-reduce-overhead": side(1250.0, 25.6, eager_l, compile_s=50.0)}}]}
j = vr.derive_engine(json.loads(json.dumps(engine)))
r8, r32 = j["rows"]
assert abs(r8["sides"]["hb-graph-fused"]["vs_hf_eager"] - 900 / 270) < 1e-12, r8
assert r8["best_compile"] == "hf-compile-reduce-overhead" and abs(r8["sides"]["hb-graph-fused"]["vs_best_compile"] - 900 / 800) < 1e-12
assert r32["best_compile"] == "hf-compile-reduce-overhead", r32["best_compile"]
assert abs(r8["eager_repeat_max_rel_diff"] - 2e-6) < 1e-9, r8["eager_repeat_max_rel_diff"]
checks = {c["name"]: c["ok"] for c in j["checks"]}
assert checks["engine losses, batch 8: hpcbench --cuda-graph against eager, per step over 4 steps"], checks
assert checks["engine losses, batch 8: hpcbench --cuda-graph --fused against eager, per step over 4 steps"], checks
assert not checks["engine losses, batch 32: hpcbench --cuda-graph against eager, per step over 4 steps"], checks
assert not checks["engine losses, batch 32: hpcbench --cuda-graph --fused against eager, per step over 4 steps"], checks
targets = {t["name"]: t["ok"] for t in j["targets"]}
assert targets == {"batch 8: >= 3x HF eager samples/s": True,                   # 3.33x
                   "batch 8: >= HF + compile reduce-overhead samples/s": True,  # 1.125x
                   "batch 32: >= 1.3x HF eager samples/s": True,                # 1.44x
                   "batch 32: >= the best HF + compile mode's samples/s": True,  # 1.04x reduce-overhead
                   "batch 32: bf16 MFU >= 30 %": False}, targets                 # 28 %
# Each graphed side is checked twice a batch: step 1 and every step.
assert not checks["engine losses, batch 32: hpcbench --cuda-graph against eager, step 1 (before any update)"], checks
# Re-deriving a derived file gives the same checks, not twice as many.
assert len(vr.derive_engine(j)["checks"]) == 8, j["checks"]
# On a GPU eager drifts from itself after the first update (atomics in attention's backward):
# later steps are read against twice that drift, the first step still against the bound.
drift_l = [4.0] + [x * (1 + 1e-3) for x in eager_l[1:]]
drifting = {"rows": [{"batch": 8, "eager_repeat_losses": drift_l, "sides": {
    "hb-eager": side(280.0, 28.6, eager_l),
    "hb-graph": side(700.0, 11.4, [4.0] + [x * (1 + 1.9e-3) for x in eager_l[1:]]),  # within 2 x 1e-3
    "hb-graph-fused": side(900.0, 8.9, [4.0 * (1 + 3e-3)] + eager_l[1:])}}]}            # step 1 outside 2e-3
dc = {c["name"]: c["ok"] for c in vr.derive_engine(drifting)["checks"]}
assert dc["engine losses, batch 8: hpcbench --cuda-graph against eager, step 1 (before any update)"], dc
assert dc["engine losses, batch 8: hpcbench --cuda-graph against eager, per step over 4 steps"], dc
assert not dc["engine losses, batch 8: hpcbench --cuda-graph --fused against eager, step 1 (before any update)"], dc
drifting["rows"][0]["sides"]["hb-graph"]["losses"][2] *= 1 + 2.5e-3  # beyond twice eager's own drift
dc = {c["name"]: c["ok"] for c in vr.derive_engine(drifting)["checks"]}
assert not dc["engine losses, batch 8: hpcbench --cuda-graph against eager, per step over 4 steps"], dc
# A batch whose graph + fused run is missing has its targets not met, saying why.
miss = vr.derive_engine({"rows": [{"batch": 4, "sides": {"hf-eager": side(130.0, 30.0, eager_l)}}]})
assert [t["ok"] for t in miss["targets"]] == [False, False] and miss["targets"][0]["detail"] == "no graph + fused run"
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "engine.json"), "w") as f:
        json.dump(engine, f)
    out = subprocess.run([sys.executable, script, "summary", d, "--out", os.path.join(d, "summary.md")],
                         capture_output=True, text=True)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1, out.returncode  # batch 32's loss checks failed
    text = open(os.path.join(d, "summary.md")).read()
    assert "## engine" in text and "Kernel numerics (bench_kernels --check-only): passed in 3 s." in text, text
    assert "| 8 | hpcbench --cuda-graph --fused | 900.0 | 8.90 | n/a | 3072 |  | cudnn_attention | 3.33x | 1.12x | 1.50e-03 |" \
        in text, text
    assert "| 8 | HF + compile (reduce-overhead) | 800.0 | 10.00 | n/a | 3072 | 55.0 | cudnn_attention | 2.96x | 1.00x |" \
        in text, text
    assert "NOT MET: batch 32: bf16 MFU >= 30 % (28.0 %)" in text and "met: batch 8: >= 3x HF eager samples/s (3.33x)" in text
    assert "batch 8: 2.00e-06" in text, text

# --- The adamw phase: recorded bench_kernels --adamw outputs.
rec = os.path.join(root, "tests", "gpu", "recorded")


def adamw_summary(j):
    """summary over a folder holding adamw.json `j`: (exit status, summary.md)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "adamw.json"), "w") as f:
            json.dump(j, f)
        out = subprocess.run([sys.executable, script, "summary", d, "--out", os.path.join(d, "summary.md")],
                             capture_output=True, text=True)
        assert "Traceback" not in out.stderr, out.stderr
        return out.returncode, open(os.path.join(d, "summary.md")).read()


with tempfile.TemporaryDirectory() as d:
    out = subprocess.run([sys.executable, script, "adamw", os.path.join(rec, "adamw-cpu-pass.out"), "0",
                          os.path.join(d, "adamw.json")], capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout, out.stderr)
    good = json.load(open(os.path.join(d, "adamw.json")))
assert not good["failed"] and good["verdict"] == "all checks passed", good["checks"]
assert len(good["numerics"]) == 15 and all(r["err"] <= r["tol"] for r in good["numerics"]), good["numerics"]
assert {r["compare"] for r in good["worst"]} == {"composite vs torch adamw", "torch fused adamw vs composite"}
t = good["timing"]
assert t["device"] == "cpu" and t["candidate"] == "composite" and len(t["candidate_ms"]) == len(t["reference_ms"]) == 5
assert abs(t["ratio"] - t["reference_ms_median"] / t["candidate_ms_median"]) < 1e-3 * t["ratio"], t
rc, text = adamw_summary(good)
assert rc == 0 and "## adamw (" in text and "FAILED" not in text, text
worst = max(good["numerics"], key=lambda r: r["err"] / r["tol"])
assert f"err {worst['err']:.3e} at tol {worst['tol']:.3e}, 0 element(s) over" in text, text
assert f"Reference / composite: {t['ratio']:.2f}x" in text and "noisy" in text, text
assert f"| {t['candidate_ops'][0]} / {t['candidate_ops'][1]} |" in text, text

bad = vr.adamw_report.parse(open(os.path.join(rec, "adamw-cpu-one-wrong.out")).read(), 1)
assert bad["failed"] and bad["timing"] is None and bad["injected"], bad
num = {c["name"]: c for c in bad["checks"]}["adamw numerics: every element within tolerance"]
assert not num["ok"] and "master" in num["detail"] and "1 element(s) over" in num["detail"], num
rc, text = adamw_summary(bad)
assert rc == 1 and "## adamw — FAILED" in text and "FAILED: adamw numerics" in text, text
assert "Not timed: a check failed." in text and "injected: element" in text, text

# The checks come from the rows: one element over tolerance fails a file whose verdict passed.
edited = json.loads(json.dumps(good))
edited["numerics"][7].update(err=2 * edited["numerics"][7]["tol"], bad=1)
rc, text = adamw_summary(edited)
assert rc == 1 and "FAILED: adamw numerics" in text and "1 element(s) over" in text, text
# No rows at all (bench_kernels died before its first comparison) is no pass.
assert vr.adamw_report.parse("Segmentation fault\n", 0)["failed"]

# A GPU's output: the kernel's rows, its fact, the kernel timed (made up: no GPU figure is checked).
gpu = "\n".join([
    "  kernel vs composite adamw      cuda   fp32  109482240    0.00 master     2.980e-08  1.232e-07  1.664e-07  1.000e-05      0 ok",
    "  kernel vs composite adamw, ragged cuda   bf16  109487400    0.00 weight     6.104e-05  2.520e-04  9.672e-04  1.562e-02      0 ok",
    "  master_adamw takes the kernel, 109482240 elements (cuda)                                          ok",
    '# adamw-timing {"device": "cuda", "candidate": "kernel", "reference": "r", "parameters": 201, "elements": 109482240, '
    '"iters": 20, "candidate_ms": [1.0, 1.1, 1.0], "reference_ms": [2.0, 2.1, 2.2], "candidate_ms_median": 1.0, '
    '"reference_ms_median": 2.1, "ratio": 2.1}',
    "# all checks passed"])
g = vr.adamw_report.parse(gpu, 0)
assert not g["failed"] and len(g["numerics"]) == 2 and g["facts"][0]["ok"] and g["timing"]["candidate"] == "kernel", g
assert g["numerics"][1]["compare"] == "kernel vs composite adamw, ragged", g["numerics"]
g = vr.adamw_report.parse(gpu.replace("elements (cuda)                                          ok",
                                      "elements (cuda)                                          FAIL"), 0)
assert g["failed"] and not {c["name"]: c["ok"] for c in g["checks"]}["adamw facts"], g["checks"]

# Every committed call's folder (a session's calls after its first go in call<N>/ beside it).
folders = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "results", "reference", "gpu", "**",
                                                                    "summary.md"), recursive=True))
assert folders, "no committed GPU results under results/reference/gpu"
for folder in folders:
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, script, "summary", folder, "--out", os.path.join(d, "summary.md")],
                             capture_output=True, text=True)
        assert "Traceback" not in out.stderr, (folder, out.stderr)
        text = open(os.path.join(d, "summary.md")).read()
        assert "| device | driver | CUDA | NCCL | torch |" in text, folder
        if os.path.exists(os.path.join(folder, "baseline.json")):
            with open(os.path.join(folder, "baseline.json")) as f:
                base = json.load(f)
            for r in base["rows"]:
                want = r["batch"] * 1000.0 / r["hpcbench"]["step_ms_median"] / r["hf_eager"]["samples_per_s"]
                assert abs(r["ratio_hf_eager"] - want) < 1e-9, (folder, r["batch"], r["ratio_hf_eager"], want)
        if os.path.exists(os.path.join(folder, "engine.json")):
            # The stored ratios are those the stored figures give (what the READMEs quote).
            with open(os.path.join(folder, "engine.json")) as f:
                eng = json.load(f)
            for r in eng["rows"]:
                hf = r["sides"]["hf-eager"]["samples_per_s"]
                for k, v in r["sides"].items():
                    assert abs(v["vs_hf_eager"] - v["samples_per_s"] / hf) < 1e-9, (folder, r["batch"], k)
print(f"validate_report: ratios by the median, empty phases rendered, the engine summariser on fabricated figures, "
      f"the adamw summariser on recorded outputs (one wrong element fails), "
      f"{len(folders)} committed folder(s) summarised")
