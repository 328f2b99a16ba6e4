"""tools/gpu/estimate.py and validate.sh --plan: the prepared GPU calls fit their device time.

- the cost model against what the H100 took: `validate.sh --plan strategies` (the phase the
  second table's call 2 ran, 130 s: results/reference/gpu/H100-80GB-HBM3-20261127/call2/
  strategies.json) estimated within 25 %;
- tools/gpu/run-third-table.sh's first call within 480 s (8 minutes of the session's 15, beside
  the machine's start and the second call), its second within 250 s, the two within 720 s;
- the whole strategies-graph phase (46 runs) put back into the first call exceeds 480 s and
  the estimate exits 1: the check can fail;
- a budget check the phase has passed leaves the commands after it out, as validate.sh does;
- bad input (no plan, no reference folder) is an error naming it.

Usage: test_estimate.py REPO_ROOT"""
import json
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
gpu = os.path.join(root, "tools", "gpu")
recorded = os.path.join(root, "results", "reference", "gpu", "H100-80GB-HBM3-20261127")


def plan(tmp, name, argv, env=None):
    """validate.sh --plan (or run-third-table.sh --plan) with its estimate as JSON."""
    out = os.path.join(tmp, f"{name}.json")
    e = dict(os.environ, HPCBENCH_VALIDATE_WORK=os.path.join(tmp, name), HPCBENCH_PLAN_JSON=out, **(env or {}))
    e.pop("OUT", None)
    p = subprocess.run(argv, capture_output=True, text=True, env=e, cwd=root)
    est = json.load(open(out)) if os.path.exists(out) else None
    return p, est


with tempfile.TemporaryDirectory() as tmp:
    # 1. The model against a recorded phase.
    p, est = plan(tmp, "strategies", [os.path.join(gpu, "validate.sh"), "--plan", "strategies"])
    assert p.returncode == 0, p.stderr
    took = json.load(open(os.path.join(recorded, "call2", "strategies.json")))["seconds"]
    # The first phase of a call carries the call's start, which call 2 spent in its shared-gpu phase.
    phase_s = est["phases"][0]["seconds"] - 23.0
    assert abs(phase_s - took) <= 0.25 * took, (phase_s, took, p.stdout)

    # 2. The prepared calls fit.
    third = os.path.join(gpu, "run-third-table.sh")
    p, est = plan(tmp, "first", [third, "--plan"])
    assert p.returncode == 0 and est["total_s"] <= 480 and est["limit_s"] == 480, (p.stdout, p.stderr)
    names = [ph["phase"] for ph in est["phases"]]
    assert names[0] == "engine-protocol" and "strategies-graph" in names, names
    p, est2 = plan(tmp, "second", [third, "--plan", "--second"])
    assert p.returncode == 0 and est2["total_s"] <= 250, (p.stdout, p.stderr)
    assert est["total_s"] + est2["total_s"] <= 720, (est["total_s"], est2["total_s"])
    # Every strategy graphed, over the two calls, exactly once.
    sg = [c[1] for ph in est["phases"] + est2["phases"] if ph["phase"] == "strategies-graph"
          for c in ph["each"] if c[1].startswith("sg-") and c[1].endswith("-eager-0") and c[1] != "sg-eager-0"]
    assert sorted(sg) == sorted(f"sg-{n}-eager-0" for n in ("ddp", "zero1", "zero2", "zero3", "fsdp-full",
                                                            "fsdp-grad-op", "tensor", "pipeline")), sg

    # 3. The whole strategies-graph phase in the first call does not fit, and the estimate says so.
    every = "ddp zero1 zero2 zero3 fsdp-full fsdp-grad-op tensor pipeline"
    p, est = plan(tmp, "all-sg", [third, "--plan"], {"HPCBENCH_SG_STRATEGIES": every})
    assert p.returncode == 1 and est["total_s"] > 480 and "exceeds its limit" in p.stderr, (p.stdout, p.stderr)

    # 4. A budget the phase has spent leaves out what follows its check, up to the next one.
    listing = os.path.join(tmp, "plan.txt")
    run = ("run hpcbench run --batch-size 32 --max-steps 40 --run-name {}\n")
    with open(listing, "w") as f:
        f.write("phase demo\n" + run.format("a") + "budget demo 1 part two\n" + run.format("b") +
                "budget demo 0 part three\n" + run.format("c") + "phase other\n" + run.format("d"))
    p = subprocess.run([sys.executable, os.path.join(gpu, "estimate.py"), listing, "--reference", recorded,
                        "--json", os.path.join(tmp, "demo.json"), "--commands"], capture_output=True, text=True)
    demo = json.load(open(os.path.join(tmp, "demo.json")))
    ran = {ph["phase"]: [c[1] for c in ph["each"]] for ph in demo["phases"]}
    assert ran == {"demo": ["a", "c"], "other": ["d"]}, ran
    assert demo["phases"][0]["skipped"] == ["part two"], demo

    # 5. Bad input names what is wrong.
    for argv, what in (([os.path.join(tmp, "missing.txt"), "--reference", recorded], "missing.txt"),
                       ([listing, "--reference", os.path.join(tmp, "nowhere")], "--reference")):
        p = subprocess.run([sys.executable, os.path.join(gpu, "estimate.py")] + argv, capture_output=True, text=True)
        assert p.returncode != 0 and what in p.stderr, (argv, p.stderr)

print("estimate: the strategies phase within 25 % of its recorded time; the third table's calls within 480 s and 250 s; "
      "every strategy graphed in one of them; the whole strategies-graph in the first call refused")
