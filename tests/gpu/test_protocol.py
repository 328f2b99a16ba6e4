"""tools/gpu/protocol.py on the runs the second GPU table recorded (an H100, results/reference/
gpu/H100-80GB-HBM3-20261127: engine at batch 8 and 32, the strategies at world size 1), as
recorded and with injected faults that must fail:

- Welch's test equals lib/stats/welch.cpp's (the figures scipy gives, tests/stats);
- speed: the recorded eager and graph + fused step times, interleaved, pass; out of order,
  too few steps, or a baseline that drifts by 10 % across the call fail; spikes (five steps
  at 3x) are counted and leave the verdict as it was;
- losses: graph + fused against the envelope of the two recorded eager runs at batch 8
  passes; the same curve 0.5 % off fails; one eager run is no envelope;
- sharded: zero 3 and the pipeline against the baseline pass at their stated multiples of
  the measured drift; each 0.5 % off fails (under the old fixed 2e-2 it passed);
- memory: the recorded eager run's column against NVML passes; the graphed run's (the
  graph pool the column left out) fails.

Usage: test_protocol.py REPO_ROOT"""
import importlib.util
import io
import json
import os
import sys
import tarfile

root = sys.argv[1]
spec = importlib.util.spec_from_file_location("protocol", os.path.join(root, "tools", "gpu", "protocol.py"))
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
folder = os.path.join(root, "results", "reference", "gpu", "H100-80GB-HBM3-20261127")


def runs_of(archive):
    out = {}
    with tarfile.open(os.path.join(folder, archive)) as t:
        for m in t.getmembers():
            if m.name.endswith("/run.json"):
                out[m.name.split("/")[-2]] = json.load(io.TextIOWrapper(t.extractfile(m)))
    return out


engine, strat = runs_of("engine-runs.tar.gz"), runs_of("strategies-runs.tar.gz")


def losses(run):
    return [float(s["loss"]) for s in run["steps"]]


def timed_ms(run):
    n = run["result"]["timed_steps"]
    return [float(s["ms"]) for s in run["steps"]][-n:]


# --- Welch, as the report's (scipy: t -9.94647, df 3.77163, p 0.000766010).
w = p.welch_log([1, 1.1, 1.2], [2, 2.1, 2.3])
assert abs(w["t"] + 9.946470652710904) < 1e-9 and abs(w["df"] - 3.771633419064511) < 1e-9, w
assert abs(w["p"] - 0.0007660098215674656) < 1e-12, w
assert abs(w["lo"] - 0.42606774785997775) < 1e-9 and abs(w["hi"] - 0.6226622585754349) < 1e-9, w
assert p.welch_log([1.0], [2.0, 3.0]) is None

# --- Speed: the recorded 30 timed steps of each, cycled to 120 (the protocol's 100 at least).
eager_ms, fused_ms = timed_ms(engine["engine-b32-eager"]), timed_ms(engine["engine-b32-graph-fused"])


def run(side, i, ms):
    return {"side": side, "name": f"{side}-{i}", "step_ms": ms}


def cycled(ms, n=120, shift=0):
    # Each run a little off the others (the H100's runs of one call differ by about 1 %).
    scale = (1.0, 1.006, 0.997)[shift % 3]
    return [scale * ms[(i + shift) % len(ms)] for i in range(n)]


def plan(base=None, cand=None, order="bcbcb"):
    base = base or [cycled(eager_ms, shift=i) for i in range(3)]
    cand = cand or [cycled(fused_ms, shift=i) for i in range(2)]
    bi, ci, out = iter(base), iter(cand), []
    for i, c in enumerate(order):
        out.append(run("baseline", i, next(bi)) if c == "b" else run("candidate", i, next(ci)))
    return out


def failed(checks):
    return [name for name, ok, _ in checks if not ok]


fig, checks = p.compare_speed(plan(), 32)
assert not failed(checks), checks
assert fig["verdict"] == "faster" and fig["comparison"]["lo"] > 1, fig  # graph + fused: 1.24x on the H100
assert fig["spikes"] == 0, fig
_, checks = p.compare_speed(plan(order="bbbcc"), 32)
assert failed(checks) == ["runs interleaved (baseline, candidate, ..., baseline)"], checks
_, checks = p.compare_speed(plan(base=[cycled(eager_ms, 30, i) for i in range(3)],
                                cand=[cycled(fused_ms, 30, i) for i in range(2)]), 32)
assert failed(checks) == ["at least 100 timed steps a run"], checks
# Drift: the machine slows by 10 % over the call, each later run slower than the one before.
slowing = [[v * (1 + 0.05 * i) for v in cycled(eager_ms, shift=i)] for i in range(3)]
_, checks = p.compare_speed(plan(base=slowing), 32)
assert any(n.startswith("baseline steady across the call") for n in failed(checks)), checks
# Spikes: five steps at 3x in each candidate run are counted; the medians do not move.
spiky = [cycled(fused_ms, shift=i) for i in range(2)]
for ms in spiky:
    for k in (3, 30, 60, 90, 110):
        ms[k] *= 3
fig_spiky, checks = p.compare_speed(plan(cand=spiky), 32)
assert not failed(checks) and fig_spiky["spikes"] == 10, (fig_spiky, checks)
# Five spikes in 120 steps move a median by a few order statistics, not by the spikes' size.
assert fig_spiky["verdict"] == fig["verdict"]
assert abs(fig_spiky["comparison"]["ratio"] / fig["comparison"]["ratio"] - 1) < 0.01, (fig_spiky, fig)

# --- Losses against the eager envelope (batch 8: the two recorded eager runs).
env = p.eager_envelope([losses(engine["engine-b8-eager"]), losses(engine["engine-b8-eager-repeat"])])
fused = losses(engine["engine-b8-graph-fused"])
ok, detail = p.envelope_check(fused, env)
assert ok, detail
ok, detail = p.envelope_check([v * 1.005 for v in fused], env)
assert not ok, detail
# Under the fused engine's own rounding floor too.
ok, detail = p.envelope_check(fused, env, floor=p.FUSED_FLOOR)
assert ok, detail
ok, detail = p.envelope_check([v * 1.005 for v in fused], env, floor=p.FUSED_FLOOR)
assert not ok, detail
ok, _ = p.envelope_check(losses(engine["engine-b8-graph"]), env)
assert ok
try:
    p.eager_envelope([losses(engine["engine-b8-eager"])])
    raise AssertionError("one eager run made an envelope")
except ValueError:
    pass

# --- Sharded bounds from measured drift: the strategies call had no baseline repeat; the
# eager repeat at batch 8 of the same call is the drift of the same kernels.
drift = p.loss_statistics(losses(engine["engine-b8-eager-repeat"]), losses(engine["engine-b8-eager"]))
base = losses(strat["strat-baseline"])
for name, pipe in (("strat-zero3", False), ("strat-fsdp-full", False), ("strat-pipeline", True)):
    cur = losses(strat[name])
    ok, detail = p.sharded_check(cur, base, drift, pipeline=pipe)
    assert ok, (name, detail)
    ok, detail = p.sharded_check([v * 1.005 for v in cur], base, drift, pipeline=pipe)
    assert not ok, (name, detail)
    # The old fixed bound let the same error through.
    assert p.loss_statistics([v * 1.005 for v in cur], base)["max"] <= 2e-2

# --- Memory: the table's column against NVML's process peak.
r = engine["engine-b32-eager"]["result"]
ok, detail = p.memory_check(r["peak_memory_bytes"], r["nvml_peak_memory_bytes"])
assert ok, detail
r = engine["engine-b32-graph"]["result"]
ok, detail = p.memory_check(r["peak_memory_bytes"], r["nvml_peak_memory_bytes"])
assert not ok, detail  # 6011 MiB in the column, 12547 MiB by NVML: the graph pool was left out
ok, _ = p.memory_check(8 << 30, 7 << 30)
assert not ok  # a column above what the process held is no measurement either
# The relative bound of issue 40's graphed strategies: 4 % either way passes, 8 % fails, as does
# the recorded eager run whose context and workspaces the column leaves out (19.9 %).
assert p.memory_check_relative(96 << 20, 100 << 20)[0] and p.memory_check_relative(104 << 20, 100 << 20)[0]
ok, detail = p.memory_check_relative(92 << 20, 100 << 20)
assert not ok and "-8.0 %" in detail, detail
assert not p.memory_check_relative(108 << 20, 100 << 20)[0]
assert not p.memory_check_relative(100 << 20, 0)[0]
r = engine["engine-b32-eager"]["result"]
assert not p.memory_check_relative(r["peak_memory_bytes"], r["nvml_peak_memory_bytes"])[0]
print("protocol: Welch as the report's; interleaving, steps, drift and spikes; the eager envelope; sharded bounds "
      "from drift; memory against NVML (absolute and 5 %): recorded runs pass, injected faults fail")
