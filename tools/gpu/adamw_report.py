"""The adamw phase of tools/gpu/validate.sh (bench_kernels --adamw, the master-weight AdamW
step of --fused bf16): its output read into adamw.json, the checks derived from the rows, and
the summary's lines (validate_report.py's `adamw` command and its summary call these).

adamw.json:
  status, rc        bench_kernels' exit
  verdict           its last line ("all checks passed" or "N checks FAILED")
  numerics          every tensor checked element by element: compare, device, dtype, tensor,
                    err = max over elements of |a - b| / (|b| + rms(b)) (b the reference: the
                    composite, or LibTorch's AdamW for the composite itself), tol, bad (elements
                    over tol), ok
  facts             the pass/fail facts that are no tolerance comparison (the kernel taken)
  worst             per comparison, its tensor of the largest err / tol
  injected          bench_kernels' note where --inject-wrong-element set one element wrong
  timing            null where nothing was timed (a check failed, --check-only); else the
                    candidate (the kernel on CUDA, the composite on a CPU) and the reference
                    (PyTorch's fused AdamW on the same work, what it includes stated), ms per
                    step of every repeat, their medians and reference / candidate, and each
                    side's ATen operations of one step (top-level, in all)
  checks, failed    derived from the rows, not from the stored verdict: a file whose rows hold
                    one element over tolerance fails whatever its verdict says
"""
import json
import math
import re

ROW = re.compile(r"^\s+(?P<compare>\S.*?adamw.*?)\s+(?P<device>cpu|cuda)\s+(?P<dtype>fp32|bf16)\s+(?P<shape>\S+)\s+"
                 r"(?P<p>\S+)\s+(?P<tensor>\S+)\s+(?P<max_abs>\S+)\s+(?P<norm>\S+)\s+(?P<err>\S+)\s+(?P<tol>\S+)\s+"
                 r"(?P<bad>\d+)\s+(?P<ok>ok|FAIL)$")
FACT = re.compile(r"^\s+(?P<what>\S.*\((?P<device>cpu|cuda)\))\s+(?P<detail>.*?)\s*(?P<ok>ok|FAIL)$")
VERDICT = re.compile(r"^# (all checks passed|\d+ checks FAILED)$")
TIMING = "# adamw-timing "


def parse(text, rc):
    """bench_kernels --adamw's output and exit status as adamw.json (checks derived)."""
    j = {"phase": "adamw", "status": "passed" if rc == 0 else "failed", "rc": rc, "verdict": "no verdict",
         "numerics": [], "facts": [], "injected": [], "timing": None}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            r = m.groupdict()
            j["numerics"].append({"compare": r["compare"], "device": r["device"], "dtype": r["dtype"],
                                  "elements": r["shape"], "tensor": r["tensor"], "err": float(r["err"]),
                                  "tol": float(r["tol"]), "bad": int(r["bad"]), "ok": r["ok"] == "ok"})
            continue
        m = FACT.match(line)
        if m:
            j["facts"].append({"what": m["what"], "detail": m["detail"], "ok": m["ok"] == "ok"})
            continue
        m = VERDICT.match(line)
        if m:
            j["verdict"] = m.group(1)
        elif line.startswith("# injected:"):
            j["injected"].append(line[2:])
        elif line.startswith(TIMING):
            j["timing"] = json.loads(line[len(TIMING):])
    j["timed"] = j["timing"] is not None
    j["output_tail"] = text[-4000:]
    return derive(j)


def _over(r):
    """A row's err over its tolerance (inf where err is not finite)."""
    return r["err"] / r["tol"] if math.isfinite(r["err"]) and r["tol"] > 0 else math.inf


def _within(r):
    return r["bad"] == 0 and math.isfinite(r["err"]) and r["err"] <= r["tol"]


def derive(j):
    """The checks from the rows (again, where the file was derived before)."""
    rows = j.get("numerics", [])
    worst = {}
    for r in rows:
        if r["compare"] not in worst or _over(r) > _over(worst[r["compare"]]):
            worst[r["compare"]] = r
    j["worst"] = list(worst.values())
    checks = []
    w = max(rows, key=_over) if rows else None
    checks.append({"name": "adamw numerics: every element within tolerance",
                   "ok": bool(rows) and all(_within(r) for r in rows),
                   "detail": (f"{len(rows)} tensors; worst {w['compare']} {w['tensor']} ({w['device']} {w['dtype']}): "
                              f"err {w['err']:.3e} at tol {w['tol']:.3e}, {w['bad']} element(s) over"
                              if w else "no rows: bench_kernels printed no comparison")})
    bad_facts = [f["what"] for f in j.get("facts", []) if not f["ok"]]
    if j.get("facts"):
        checks.append({"name": "adamw facts", "ok": not bad_facts,
                       "detail": "failed: " + "; ".join(bad_facts) if bad_facts else f"{len(j['facts'])} held"})
    checks.append({"name": "bench_kernels --adamw: exit 0 and 'all checks passed'",
                   "ok": j.get("rc") == 0 and j.get("verdict") == "all checks passed",
                   "detail": f"exit {j.get('rc')}, '{j.get('verdict')}'"})
    t = j.get("timing")
    if t:
        reps = len(t["candidate_ms"])
        checks.append({"name": "adamw timing: repeats of both sides", "ok": reps >= 3 and len(t["reference_ms"]) == reps,
                       "detail": f"{reps} candidate, {len(t['reference_ms'])} reference"})
    j["checks"] = checks
    j["failed"] = not all(c["ok"] for c in checks)
    return j


def _ops(o):
    return f"{o[0]} / {o[1]}" if o else "not counted"


def summary_lines(j):
    L = ["Numerics first (bench_kernels --adamw): per comparison its worst tensor, err = max over elements of "
         "|a - b| / (|b| + rms(b)) against the reference named second; the timing runs only after every check passed.",
         "", "| comparison | device | dtype | worst tensor | elements | err | tol | elements over tol |",
         "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in j.get("worst", []):
        L.append(f"| {r['compare']} | {r['device']} | {r['dtype']} | {r['tensor']} | {r['elements']} | {r['err']:.3e} | "
                 f"{r['tol']:.3e} | {r['bad']} |")
    L.append("")
    L += [f"- {n}" for n in j.get("injected", [])]
    t = j.get("timing")
    if not t:
        L += ["Not timed: " + ("a check failed." if j.get("failed") else "bench_kernels printed no timing."), ""]
        return L
    noisy = " (a CPU: host-bound, noisy on a shared machine; the medians only)" if t["device"] == "cpu" else ""
    L += [f"Timing on {t['device']}{noisy}: {t['parameters']} parameters, {t['elements']} elements, "
          f"{len(t['candidate_ms'])} interleaved repeats of {t['iters']} steps; reference: {t['reference']}.", "",
          "| side | ms per step (median) | repeats (ms) | ATen ops top-level / in all |", "| --- | ---: | --- | ---: |",
          f"| {t['candidate']} | {t['candidate_ms_median']:.4f} | {', '.join(f'{x:.4f}' for x in t['candidate_ms'])} | "
          f"{_ops(t.get('candidate_ops'))} |",
          f"| reference | {t['reference_ms_median']:.4f} | {', '.join(f'{x:.4f}' for x in t['reference_ms'])} | "
          f"{_ops(t.get('reference_ops'))} |",
          "", f"Reference / {t['candidate']}: {t['ratio']:.2f}x (above 1: the {t['candidate']} is faster).", ""]
    return L
