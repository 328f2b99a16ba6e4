"""Checks of tools/gpu/validate.sh's deterministic phase (issue 42): under
--deterministic every run of a group must give the same loss at every step, bit for
bit, where the group's runs run the same kernels: eager against eager (the run to
run floor that was 0.93e-3 to 2.55e-3 without the mode, from attention's backward) and
the captured step against eager; the fused model against itself graphed. Each run must
also record the mode as in force (run.json's "deterministic", read back from ATen) and
each graphed run must say its step was captured.

  deterministic_check.py RUNS OUT.json --group NAME=RUN,RUN,... [--group ...] [--dry]

RUNS holds the run folders. The first run of a group is its reference; a difference is
reported with its first step, the largest absolute difference and the differences in
units in the last place (ULPs) of the reference. Under --dry (a CPU: the graph-ready
step is not captured) a graphed run must say why it was not captured instead. Exit 1
when a check fails."""
import argparse
import json
import math
import os
import sys


def read(runs, name):
    with open(os.path.join(runs, name, "run.json")) as f:
        rj = json.load(f)
    return {"losses": [float(s["loss"]) for s in rj.get("steps", [])],
            "deterministic": rj.get("deterministic", {}),
            "config": rj.get("config", {}),
            "cuda_graph": str(rj.get("result", {}).get("cuda_graph", ""))}


def ulps(a, b):
    """How many doubles lie between a and b (0: the same bits)."""
    if a == b:
        return 0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / math.ulp(max(abs(a), abs(b)))


def compare(ref, other):
    """First differing step (1-based, None: identical), largest |difference|, largest ULPs."""
    if len(ref) != len(other):
        return {"same_length": False, "first_diff_step": 1, "max_abs_diff": math.inf, "max_ulps": math.inf}
    first, worst, worst_ulps = None, 0.0, 0
    for i, (a, b) in enumerate(zip(ref, other)):
        # Bit for bit: equal values, and a NaN never equals itself.
        if a != b or math.isnan(a):
            first = first or i + 1
            worst = max(worst, abs(a - b) if math.isfinite(a - b) else math.inf)
            worst_ulps = max(worst_ulps, ulps(a, b))
    return {"same_length": True, "first_diff_step": first, "max_abs_diff": worst, "max_ulps": worst_ulps}


def check(name, ok, detail):
    return {"name": name, "ok": bool(ok), "detail": detail}


def group_checks(runs, group, members, dry):
    checks, runs_read = [], {}
    for name in members:
        r = read(runs, name)
        runs_read[name] = r
        d = r["deterministic"]
        checks.append(check(f"{name}: deterministic mode in force", d.get("algorithms") is True and
                            d.get("warn_only") is False and d.get("cudnn_benchmark") is False and
                            d.get("cublas_workspace_config") in (":4096:8", ":16:8"),
                            f"run.json deterministic = {json.dumps(d)}"))
        checks.append(check(f"{name}: losses recorded", len(r["losses"]) > 0 and
                            all(math.isfinite(x) for x in r["losses"]), f"{len(r['losses'])} steps"))
        if r["config"].get("train.cuda_graph") == "on":
            captured = r["cuda_graph"].startswith("captured")
            ok = (not captured and r["cuda_graph"].startswith("not captured")) if dry else captured
            checks.append(check(f"{name}: step {'not captured (a CPU)' if dry else 'captured'}", ok,
                                f"cuda_graph = {r['cuda_graph']!r}"))
    ref = members[0]
    for name in members[1:]:
        c = compare(runs_read[ref]["losses"], runs_read[name]["losses"])
        same = c["same_length"] and c["first_diff_step"] is None
        detail = ("every step's loss the same bits" if same else
                  f"first differs at step {c['first_diff_step']}, largest difference {c['max_abs_diff']:.3e} "
                  f"({c['max_ulps']:.0f} ULPs)")
        checks.append(dict(check(f"{group}: {name} == {ref} bit for bit", same, detail), **c))
    return checks


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("out")
    ap.add_argument("--group", action="append", required=True, help="NAME=RUN,RUN,...")
    ap.add_argument("--dry", action="store_true")
    a = ap.parse_args(argv)
    res = {"phase": "deterministic", "dry": a.dry, "checks": []}
    for g in a.group:
        name, _, members = g.partition("=")
        members = [m for m in members.split(",") if m]
        if len(members) < 2:
            ap.error(f"--group {g}: a group compares at least two runs")
        try:
            res["checks"] += group_checks(a.runs, name, members, a.dry)
        except (OSError, ValueError, KeyError) as e:
            res["checks"].append(check(f"{name}: runs readable", False, f"{type(e).__name__}: {e}"))
    res["status"] = "passed" if all(c["ok"] for c in res["checks"]) else "failed"
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1, default=str)
    for c in res["checks"]:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['name']}: {c['detail']}")
    print(f"deterministic: {res['status']}")
    return 0 if res["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
