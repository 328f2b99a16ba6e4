#!/usr/bin/env python3
"""The profile and fp8 phases' figures (tools/gpu/validate.sh), read from what they left:

    levers_report.py profile WORK OUT.json [--dry]
        WORK/runs/<name>/run.json and kernel_table.csv of the profile phase's runs: the
        profiled run's kernel table (top rows, the idle row, its sums and what it profiled),
        each lever's step medians off and on (one of the two is the base run, which runs
        first and again last: the drift between the two base runs, which bracket every lever
        run, is the floor a lever's gain is read against), what --tunableop tuned and chose,
        and dropout 0.1 beside 0.
    levers_report.py fp8 BENCH_OUTPUT OUT.json
        bench_kernels --fp8's rows and verdict lines.

Checks (name, ok, detail) are what the run proves: every run present and finished, the table
adding up to the profiled steps (one stream: exactly; else the overlap said), the profiled steps
being replays; the FP8 casts sane. Timings decide no check.
"""
import csv
import json
import os
import re
import sys

PROFILED = "profile-graph-fused"
BASE, BASE_REPEAT = "lever-base", "lever-base-repeat"
LEVERS = {  # lever: (run without it, run with it); BASE is the default engine's run
    "qkv_packed_grad": (BASE, "lever-qkv-packed"),
    # On by default: the base run is the one with them.
    "batch_prefetch": ("lever-no-prefetch", BASE),
    "residual_fold": ("lever-no-residual-fold", BASE),
    "fused_embedding": ("lever-no-fused-embedding", BASE),
    "fused_adamw": ("lever-no-fused-adamw", BASE),
    "tunableop": (BASE, "lever-tunableop"),
}
TUNED = "lever-tunableop"
DROPOUT = {"0": "lever-base", "0.1": "dropout-0.1"}


def run_json(work, name):
    p = os.path.join(work, "runs", name, "run.json")
    return json.load(open(p)) if os.path.exists(p) else None


def step_ms(j):
    return j["result"]["step_ms_median"] if j else None


def profile(work, out, dry):
    checks, res = [], {"phase": "profile", "dry": dry}
    j = run_json(work, PROFILED)
    checks.append({"name": "profiled run finished", "ok": bool(j and j["result"]["status"] == "ok"), "detail": PROFILED})
    if j and "profile" in j:
        p = j["profile"]
        res["profile"] = p
        rows = list(csv.DictReader(open(os.path.join(work, "runs", PROFILED, "kernel_table.csv"))))
        total = sum(float(r["total_ms"]) for r in rows)
        want = p["window_ms"] + p["overlap_ms"]
        checks.append({"name": "table adds up to the profiled steps (+ stream overlap)",
                       "ok": abs(total - want) <= 1e-3 * max(1.0, want), "detail": f"{total:.4f} vs {want:.4f} ms"})
        whats = {w["what"] for w in p["profiled"]}
        # On a GPU the three profiled steps are replays; on a CPU nothing is captured.
        replay_ok = whats == {"graph replay"} if not dry else all(w.startswith("graph-ready step") for w in whats)
        checks.append({"name": "profiled steps are what was asked", "ok": replay_ok, "detail": ", ".join(sorted(whats))})
        res["kernel_table"] = rows[:40] + ([rows[-1]] if len(rows) > 40 else [])
    res["levers"] = levers(work, checks)
    checks.append(tunableop_check(work, dry, res))
    drop = {p: step_ms(run_json(work, n)) for p, n in DROPOUT.items()}
    checks.append({"name": "dropout 0 and 0.1 finished", "ok": all(v is not None for v in drop.values()),
                   "detail": json.dumps(drop)})
    res["dropout_step_ms"] = drop
    res["checks"] = checks
    json.dump(res, open(out, "w"), indent=1)
    for c in checks:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['name']}: {c['detail']}")
    return all(c["ok"] for c in checks)


def levers(work, checks):
    """Each lever's off and on step medians. The base run stands for the default engine on
    its side: the mean of its two runs, whose drift (they bracket every lever run) is the
    floor; a gain below it is not one this run shows."""
    base = [step_ms(run_json(work, n)) for n in (BASE, BASE_REPEAT)]
    checks.append({"name": "base runs finished (first and last)", "ok": None not in base,
                   "detail": f"{BASE}, {BASE_REPEAT}"})
    out = {}
    for lever, (off, on) in LEVERS.items():
        other = on if off == BASE else off
        ms = step_ms(run_json(work, other))
        checks.append({"name": f"{lever}: run finished", "ok": ms is not None, "detail": other})
        if ms is None or None in base:
            continue
        b = sum(base) / 2
        off_ms, on_ms = (b, ms) if off == BASE else (ms, b)
        out[lever] = {"off_run": off, "on_run": on, "off_ms": off_ms, "on_ms": on_ms, "gain_ms": off_ms - on_ms,
                      "floor_ms": abs(base[0] - base[1]), "speedup": off_ms / on_ms}
    return out


def tunableop_check(work, dry, res):
    """What --tunableop did, from its run.json: on a GPU it tuned (GEMMs chosen, the results
    file beside run.json); on the CPU (--dry) nothing, with the reason recorded."""
    j = run_json(work, TUNED)
    t = (j or {}).get("tunableop")
    res["tunableop"] = t
    if not t:
        return {"name": "tunableop: recorded", "ok": False, "detail": f"{TUNED}: no tunableop record"}
    if dry:
        ok = t.get("on") is False and "nothing was tuned" in t.get("reason", "")
        return {"name": "tunableop: recorded (CPU: nothing tuned)", "ok": ok, "detail": json.dumps(t)}
    has_file = os.path.exists(os.path.join(work, "runs", TUNED, t.get("file") or "-"))
    ok = t.get("on") is True and t.get("gemms", 0) > 0 and has_file
    return {"name": "tunableop: GEMMs tuned, results file written", "ok": ok,
            "detail": f"{t.get('gemms')} GEMMs, chosen {json.dumps(t.get('chosen'))}, file {has_file}"}


ROW = re.compile(r"^  (tensor|row)\s+(\S+)\s+(fwd|dgrad|wgrad)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
                 r"\s+(\S+)\s+(\S+)x\s+(.*)$")


def fp8(bench_output, out):
    text = open(bench_output).read()
    rows = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            keys = ["scaling", "linear", "pass", "m", "n", "k", "sqnr_db", "bound", "bf16_ms", "gemm_ms", "casts_ms",
                    "speedup", "how"]
            rows.append(dict(zip(keys, m.groups())))
    verdicts = [l[2:] for l in text.splitlines() if l.startswith("# tensor-wise") or l.startswith("# row-wise")]
    checks = [{"name": "24 GEMM rows (12 x 2 scalings)", "ok": len(rows) == 24, "detail": str(len(rows))},
              {"name": "casts sane", "ok": "# fp8: all casts sane" in text, "detail": ""}]
    json.dump({"phase": "fp8", "rows": rows, "verdicts": verdicts, "checks": checks}, open(out, "w"), indent=1)
    for c in checks:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['name']}: {c['detail']}")
    for v in verdicts:
        print(v)
    return all(c["ok"] for c in checks)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "profile":
        sys.exit(0 if profile(sys.argv[2], sys.argv[3], "--dry" in sys.argv[4:]) else 1)
    if len(sys.argv) == 4 and sys.argv[1] == "fp8":
        sys.exit(0 if fp8(sys.argv[2], sys.argv[3]) else 1)
    sys.exit(__doc__)
