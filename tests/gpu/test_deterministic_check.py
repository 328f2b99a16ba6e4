"""tools/gpu/deterministic_check.py (validate.sh's deterministic phase) on run folders made
here from the second GPU table's recorded H100 runs (results/reference/gpu/
H100-80GB-HBM3-20261127), with injected faults that must fail:

- the recorded eager run and its repeat at batch 8 (no deterministic mode: attention's
  backward sums with atomics) differ, and are refused, also for the missing mode;
- the same losses twice under a recorded mode pass, the graphed one captured;
- one step one ULP off fails, naming the step; a mode recorded off, warn-only or under an
  unreproducible cuBLAS setting fails; a graphed run that was not captured fails on a GPU
  and passes under --dry only where it says why;
- validate_report.py summary shows the phase's result (passed, or failed with its checks), and
  validate.sh's usage and unknown-phase messages list the phase.

Usage: test_deterministic_check.py REPO_ROOT"""
import copy
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile

root = sys.argv[1]
spec = importlib.util.spec_from_file_location("deterministic_check",
                                              os.path.join(root, "tools", "gpu", "deterministic_check.py"))
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
folder = os.path.join(root, "results", "reference", "gpu", "H100-80GB-HBM3-20261127")

recorded = {}
with tarfile.open(os.path.join(folder, "engine-runs.tar.gz")) as t:
    for m in t.getmembers():
        if m.name.endswith("/run.json"):
            recorded[m.name.split("/")[-2]] = json.load(io.TextIOWrapper(t.extractfile(m)))

MODE = {"algorithms": True, "warn_only": False, "cudnn_deterministic": True, "cudnn_benchmark": False,
        "cublas_workspace_config": ":4096:8"}


def write(runs, name, rj):
    os.makedirs(os.path.join(runs, name), exist_ok=True)
    with open(os.path.join(runs, name, "run.json"), "w") as f:
        json.dump(rj, f)


def verdict(runs, groups, dry=False):
    out = os.path.join(runs, "out.json")
    argv = [runs, out] + [x for g in groups for x in ("--group", g)] + (["--dry"] if dry else [])
    rc = d.main(argv)
    with open(out) as f:
        return rc, json.load(f)


def failed(res):
    return [c["name"] for c in res["checks"] if not c["ok"]]


with tempfile.TemporaryDirectory() as tmp:
    runs = os.path.join(tmp, "runs")
    # 1. The recorded eager runs: not bit for bit, and no mode recorded.
    a, b = recorded["engine-b8-eager"], recorded["engine-b8-eager-repeat"]
    assert [s["loss"] for s in a["steps"]] != [s["loss"] for s in b["steps"]]
    write(runs, "rec-a", a)
    write(runs, "rec-b", b)
    rc, res = verdict(runs, ["eager=rec-a,rec-b"])
    assert rc == 1 and res["status"] == "failed", res
    diff = next(c for c in res["checks"] if "bit for bit" in c["name"])
    assert not diff["ok"] and diff["first_diff_step"] is not None and diff["max_abs_diff"] > 0, diff
    assert any("mode in force" in n for n in failed(res)), res

    # 2. The same losses under the mode pass; the graphed run captured.
    base = copy.deepcopy(a)
    base["deterministic"] = MODE
    base["config"] = dict(base.get("config", {}), **{"train.cuda_graph": "off"})
    graph = copy.deepcopy(base)
    graph["config"]["train.cuda_graph"] = "on"
    graph["result"]["cuda_graph"] = "captured"
    write(runs, "e0", base)
    write(runs, "e1", base)
    write(runs, "g", graph)
    rc, res = verdict(runs, ["eager=e0,e1,g"])
    assert rc == 0 and res["status"] == "passed", res

    # 3. One step one ULP off fails, at that step.
    off = copy.deepcopy(graph)
    x = off["steps"][17]["loss"]
    off["steps"][17]["loss"] = math.nextafter(x, math.inf)
    write(runs, "g-ulp", off)
    rc, res = verdict(runs, ["eager=e0,g-ulp"])
    assert rc == 1, res
    diff = next(c for c in res["checks"] if "bit for bit" in c["name"])
    assert diff["first_diff_step"] == 18 and diff["max_ulps"] == 1, diff

    # 4. The mode recorded off, warn-only, or under a cuBLAS setting that is not reproducible.
    for key, value in (("algorithms", False), ("warn_only", True), ("cublas_workspace_config", ""),
                       ("cublas_workspace_config", ":0:0"), ("cudnn_benchmark", True)):
        bad = copy.deepcopy(base)
        bad["deterministic"][key] = value
        write(runs, "bad", bad)
        rc, res = verdict(runs, ["eager=e0,bad"])
        assert rc == 1 and failed(res) == ["bad: deterministic mode in force"], (key, value, res)

    # 5. A graphed run not captured: a failure on a GPU; under --dry it must say why.
    uncaptured = copy.deepcopy(graph)
    uncaptured["result"]["cuda_graph"] = "not captured: the device is a CPU"
    write(runs, "g-cpu", uncaptured)
    rc, res = verdict(runs, ["eager=e0,g-cpu"])
    assert rc == 1 and failed(res) == ["g-cpu: step captured"], res
    rc, res = verdict(runs, ["eager=e0,g-cpu"], dry=True)
    assert rc == 0, res
    rc, res = verdict(runs, ["eager=e0,g"], dry=True)
    assert rc == 1 and failed(res) == ["g: step not captured (a CPU)"], res

    # 6. A run that is not there is a failure, not a pass.
    rc, res = verdict(runs, ["eager=e0,nowhere"])
    assert rc == 1, res

    # 7. validate_report.py summary shows the phase's result: a pass as passed, the failure above
    # (a run missing) as failed, with its checks, and the summary's exit status follows it.
    report = os.path.join(root, "tools", "gpu", "validate_report.py")
    for groups, status, rc_want in ((["eager=e0,e1,g"], "passed", 0), (["eager=e0,nowhere"], "failed", 1)):
        call = os.path.join(tmp, f"call-{status}")
        os.makedirs(call)
        d.main([runs, os.path.join(call, "deterministic.json")] + [x for g in groups for x in ("--group", g)])
        out = subprocess.run([sys.executable, report, "summary", call, "--out", os.path.join(call, "summary.md")],
                             capture_output=True, text=True)
        text = open(os.path.join(call, "summary.md")).read()
        assert out.returncode == rc_want, (status, out.returncode, out.stderr)
        assert "## deterministic" in text and f"bit for bit at every step: {status}" in text, text
        assert ("FAILED: eager: runs readable" in text) == (status == "failed"), text

# 8. validate.sh names the phase wherever it lists its phases: the usage and an unknown phase.
script = os.path.join(root, "tools", "gpu", "validate.sh")
for argv, what in (([], "usage"), (["no-such-phase"], "unknown phase")):
    out = subprocess.run([script] + argv, capture_output=True, text=True)
    assert out.returncode == 2 and what in out.stderr and " deterministic " in out.stderr, (argv, out.stderr)

print("deterministic_check: recorded eager runs without the mode refused; identical losses under the mode pass; "
      "one ULP, a mode off or unreproducible, an uncaptured graph fail")
