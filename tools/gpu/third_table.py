"""The third GPU table's phases (issue 43) read back: engine-protocol (the engine by the
protocol of protocol.py: interleaved repeats, the eager envelope, memory against NVML) and
squad-eval (the shipped SQuAD sample evaluated by eager and by the graphed, fused engine).
validate_report.py calls these for `engine-protocol` and `squad-eval` and renders their
tables in summary.md."""
import glob
import json
import os
import re
import statistics

import protocol

# EM and F1 of the graphed, fused engine against eager's on the shipped sample (1449
# questions): a bf16 rounding that flips the argmax of a near tie moves one answer, 0.07
# points; one point is fourteen answers, well past rounding and well short of a wrong
# evaluation (masters not read back after a capture: EM and F1 of an untrained model).
SQUAD_EVAL_POINTS = 1.0
# Validation loss, relative: the fused engine's per-step bound (validate_report.py).
SQUAD_EVAL_LOSS = 2e-3


def read_run_json(work, name):
    with open(os.path.join(work, "runs", name, "run.json")) as f:
        return json.load(f)


def timed_steps(rj):
    n = int(rj["result"]["timed_steps"])
    return [float(s["ms"]) for s in rj["steps"]][-n:] if n > 0 else []


def losses(rj):
    return [float(s["loss"]) for s in rj["steps"]]


def protocol_runs(work, prefix):
    """The set's runs in the order they ran: <prefix>-<i>-<eager|graph-fused>."""
    found = []
    for path in glob.glob(os.path.join(work, "runs", f"{prefix}-*", "run.json")):
        name = os.path.basename(os.path.dirname(path))
        m = re.fullmatch(re.escape(prefix) + r"-(\d+)-(eager|graph-fused)", name)
        if m:
            found.append((int(m.group(1)), m.group(2), name))
    return sorted(found)


def part(work, prefix, batch, min_steps, dry=False):
    """One interleaved set: speed by Welch's interval, the graphed runs' losses against the
    eager envelope, every run's memory column against NVML's peak."""
    checks, row = [], {"set": prefix, "batch": batch}
    runs = protocol_runs(work, prefix)
    if not runs:
        return row, [protocol_check(f"{prefix}: runs present", False, "none")]
    rjs = {name: read_run_json(work, name) for _, _, name in runs}
    speed_runs = [{"side": "baseline" if side == "eager" else "candidate", "name": name,
                   "step_ms": timed_steps(rjs[name])} for _, side, name in runs]
    fig, speed_checks = protocol.compare_speed(speed_runs, batch, min_steps)
    row["speed"] = fig
    for n, ok, d in speed_checks:
        if dry and n.startswith("baseline steady"):
            # A shared 2-core CPU's drift says nothing of the GPU's: stated, not checked.
            row.setdefault("notes", []).append(f"{prefix}: {n} (--dry, not a check): {d}")
        else:
            checks.append(protocol_check(f"{prefix}: {n}", ok, d))
    eager = [losses(rjs[name]) for _, side, name in runs if side == "eager"]
    dropout = float(rjs[runs[0][2]].get("config", {}).get("train.dropout", 0) or 0)
    row["dropout"] = dropout
    try:
        env = protocol.eager_envelope(eager)
        row["eager_spread"] = env["spread"]
        for _, side, name in runs:
            if side != "graph-fused":
                continue
            ok, detail = protocol.envelope_check(losses(rjs[name]), env, floor=protocol.FUSED_FLOOR)
            if dropout > 0:
                # The fused dropout kernel draws its own masks: the curves agree to dropout's noise,
                # which the eager repeats (the same masks each) do not show. Stated, not checked.
                row.setdefault("notes", []).append(f"{name} against the eager envelope (dropout {dropout:g}, not "
                                                   f"a check): {detail}")
            else:
                checks.append(protocol_check(f"{prefix}: {name} losses within the eager envelope", ok, detail))
    except ValueError as e:
        checks.append(protocol_check(f"{prefix}: eager envelope", False, str(e)))
    row["memory"] = []
    for _, side, name in runs:
        r = rjs[name]["result"]
        ok, detail = protocol.memory_check(r.get("peak_memory_bytes", 0), r.get("nvml_peak_memory_bytes", 0))
        row["memory"].append({"run": name, "column_bytes": r.get("peak_memory_bytes", 0),
                              "nvml_bytes": r.get("nvml_peak_memory_bytes", 0), "ok": ok})
        if r.get("device") != "cpu":
            checks.append(protocol_check(f"{prefix}: {name} memory column against NVML's process peak", ok, detail))
    eager_sps = [x["samples_per_s"] for x in fig["runs"] if x["side"] == "baseline"]
    if len(eager_sps) >= 2:
        # The noise floor: how far apart the eager runs of one call are.
        row["noise_floor"] = max(eager_sps) / min(eager_sps) - 1
    return row, checks


# Issue 41's targets for this call, judged on the graph + fused runs' median samples/s (the
# median over the set's graphed runs of each run's median step) against the HF + torch.compile
# runs measured in the same call: at the small batches 1.3x reduce-overhead (the mode made for
# them), at the largest 1.1x the best mode measured there, and bf16 MFU 30 % (33 % a stretch,
# reported, not required). A target not measured in the call is listed as not met, saying so:
# targets are what the call shows, not checks that fail it.
TARGET_SMALL_BATCH = 1.3
TARGET_LARGE_BATCH = 1.1
TARGET_MFU, STRETCH_MFU = 0.30, 0.33


def targets(work, rows, references):
    out = []
    by_batch = {r["batch"]: r for r in rows if r.get("dropout", 0) == 0 and r.get("speed")}
    largest = max([r["batch"] for r in rows] or [0])
    compile_sps = {}
    for ref in references:
        if not ref.get("error") and isinstance(ref.get("samples_per_s"), (int, float)):
            b = int(ref["batch"])
            compile_sps[b] = max(compile_sps.get(b, 0), float(ref["samples_per_s"]))
    for b in sorted(set(by_batch) | set(compile_sps)):
        want = TARGET_LARGE_BATCH if b == largest else TARGET_SMALL_BATCH
        mode = "the best HF + compile mode measured" if b == largest else "HF + compile reduce-overhead"
        name = f"batch {b}: graph + fused >= {want:g}x {mode}"
        row = by_batch.get(b)
        cand = [x["samples_per_s"] for x in ((row or {}).get("speed") or {}).get("runs", []) if x["side"] == "candidate"]
        if not cand or b not in compile_sps:
            why = "no graph + fused runs at dropout 0" if not cand else "no HF + compile run in this call"
            out.append(protocol_check(name, False, f"not measured: {why}"))
            continue
        ratio = statistics.median(cand) / compile_sps[b]
        out.append(protocol_check(name, ratio >= want, f"{ratio:.3f}x ({statistics.median(cand):.1f} against "
                                                       f"{compile_sps[b]:.1f} samples/s)"))
    row = by_batch.get(largest)
    mfus = []
    for x in ((row or {}).get("speed") or {}).get("runs", []):
        if x["side"] == "candidate":
            mfu = read_run_json(work, x["name"])["result"].get("mfu")
            if isinstance(mfu, (int, float)) and mfu > 0:
                mfus.append(float(mfu))
    name = f"batch {largest}: bf16 MFU >= {100 * TARGET_MFU:.0f} % (stretch {100 * STRETCH_MFU:.0f} %)"
    if not mfus:
        out.append(protocol_check(name, False, "not measured: no MFU (no peak for the device, or no graphed run)"))
    else:
        m = statistics.median(mfus)
        out.append(protocol_check(name, m >= TARGET_MFU, f"{100 * m:.1f} %" + (", the stretch too" if m >= STRETCH_MFU
                                                                                 else "")))
    return out


def protocol_check(name, ok, detail):
    return {"name": name, "ok": bool(ok), "detail": detail}


def phase_engine_protocol(a):
    res = {"rows": [], "checks": [], "references": []}
    for spec in [s for s in a.parts.split(",") if s]:
        prefix, batch = spec.rsplit(":", 1)
        row, checks = part(a.work, prefix, int(batch), a.min_steps, a.dry)
        res["rows"].append(row)
        res["checks"] += checks
    for path in sorted(glob.glob(os.path.join(a.work, "runs", "ref", "proto-b*-compile-reduce-overhead.json"))):
        with open(path) as f:
            ref = json.load(f)
        res["references"].append({"file": os.path.basename(path), "batch": ref.get("batch"),
                                   "samples_per_s": ref.get("samples_per_s"), "error": ref.get("error"),
                                   "compile_s": ref.get("compile_s")})
    res["targets"] = targets(a.work, res["rows"], res["references"])
    try:
        with open(os.path.join(a.work, "skipped-engine-protocol.txt")) as f:
            res["skipped"] = [l.strip() for l in f if l.strip()]
    except OSError:
        res["skipped"] = []
    return res


def phase_squad_eval(a):
    res = {"checks": []}
    try:
        e = read_run_json(a.work, "squad-eval-eager")["result"]
        g = read_run_json(a.work, "squad-eval-graph-fused")["result"]
    except OSError as err:
        res["checks"].append(protocol_check("squad-eval: both runs present", False, str(err)))
        return res
    res["eager"] = {k: e.get(k) for k in ("exact_match", "f1", "val_loss", "cuda_graph")}
    res["graph_fused"] = {k: g.get(k) for k in ("exact_match", "f1", "val_loss", "cuda_graph")}
    evaluated = all(isinstance(r.get(k), (int, float)) and r[k] >= 0 for r in (e, g) for k in ("exact_match", "f1"))
    res["checks"].append(protocol_check("squad-eval: both evaluated", evaluated,
                                        f"EM {e.get('exact_match')} / {g.get('exact_match')}"))
    if evaluated:
        for k in ("exact_match", "f1"):
            d = abs(g[k] - e[k])
            res["checks"].append(protocol_check(f"squad-eval: {k} equal within {SQUAD_EVAL_POINTS:g} point", d <= SQUAD_EVAL_POINTS,
                                                f"{g[k]:.2f} against eager's {e[k]:.2f} ({d:.2f} points)"))
        d = abs(g["val_loss"] - e["val_loss"]) / max(abs(e["val_loss"]), 1e-12)
        res["checks"].append(protocol_check(f"squad-eval: validation loss within {SQUAD_EVAL_LOSS:g} relative",
                                            d <= SQUAD_EVAL_LOSS, f"{g['val_loss']:.5f} against {e['val_loss']:.5f}"))
    return res


def summary_lines(name, j):
    L = []
    if name == "engine-protocol":
        L.append("Eager and --cuda-graph --fused interleaved (eager first and last); samples/s by each run's median "
                 "step; ratio: graph + fused over eager with Welch's 95 % interval on the runs' log samples/s "
                 "(tools/gpu/protocol.py).")
        L.append("")
        L.append("| set | batch | dropout | runs | ratio [95 %] | p | eager noise floor | spikes | eager loss spread "
                 "(median, last 10) |")
        L.append("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |")
        for r in j.get("rows", []):
            sp, c = r.get("speed", {}), (r.get("speed") or {}).get("comparison")
            ratio = f"{c['ratio']:.3f}x [{c['lo']:.3f}, {c['hi']:.3f}]" if c else "n/a"
            p = f"{c['p']:.3g}" if c else ""
            sprd = r.get("eager_spread", {})
            L.append(f"| {r['set']} | {r['batch']} | {r.get('dropout', 0):g} | {len(sp.get('runs', []))} | {ratio} | {p} | "
                     f"{100 * r.get('noise_floor', 0):.1f} % | {sp.get('spikes', 0)} | "
                     f"{sprd.get('median', 0):.2e}, {sprd.get('last10', 0):.2e} |")
        L.append("")
        for r in j.get("rows", []):
            L += [f"- {n}" for n in r.get("notes", [])]
        for ref in j.get("references", []):
            L.append(f"- HF + compile reduce-overhead, batch {ref['batch']}: "
                     + (f"error: {ref['error']}" if ref.get("error") else f"{ref['samples_per_s']:.1f} samples/s"))
        if j.get("skipped"):
            L.append(f"- not run for time: {'; '.join(j['skipped'])}")
        L.append("")
    if name == "squad-eval" and "eager" in j:
        e, g = j["eager"], j["graph_fused"]
        L.append("| side | EM | F1 | validation loss | CUDA graph |")
        L.append("| --- | ---: | ---: | ---: | --- |")
        for label, r in (("eager", e), ("--cuda-graph --fused", g)):
            L.append(f"| {label} | {r['exact_match']} | {r['f1']} | {r['val_loss']} | {r['cuda_graph']} |")
        L.append("")
    return L
