"""The GPU measurement protocol's arithmetic (issue 42), apart from the phases that
collect the figures (validate_report.py) so that it is tested on recorded runs
(tests/gpu/test_validate_report.py) with injected drift, spikes and loss errors.

- Speed: the baseline and the candidate run interleaved in one call (baseline,
  candidate, baseline, candidate, baseline), at least MIN_TIMED_STEPS timed steps each;
  each run's figure is its median step; the two sides are compared with the report's
  test, Welch's t on the logs of the runs' medians (lib/stats/welch.h), whose interval
  of the ratio is printed. Between two calls on one H100 a strategy's median moved by
  12 points; within a call, interleaving spreads slow drift over both sides and the
  baseline's first and last runs show it.
- Losses: against an envelope of at least two eager repeats. Two statistics, each
  against ENVELOPE_FACTOR times the same statistic between the eager repeats: the
  median over the steps of the relative distance to the eager median, and the
  relative distance of the mean of the last 10 steps. The largest single-step
  difference, which the previous check used, is one draw of attention's
  nondeterministic backward (it moved from 0.93e-3 to 2.55e-3 between calls).
- Sharded strategies: the same two statistics against the baseline, bounded by
  SHARDED_DRIFT_MULTIPLE times the baseline's own drift (PIPELINE_DRIFT_MULTIPLE for
  the pipeline, whose micro-batches run bf16 GEMMs of a quarter of the rows and round
  differently: 2.2e-3 per-step median against the eager 3.6e-4 on the H100), and at least
  a rounding floor where the drift is 0 (SHARDED_FLOOR, PIPELINE_FLOOR), never the fixed 2e-2
  under which a 0.5 % error passed.
- Memory: the table's column (what the allocator's peak says the device held) against
  NVML's process peak, which adds the CUDA context, cuBLAS workspaces and NCCL
  buffers and the caching allocator's unused reserve: the column may not exceed NVML's,
  and NVML may exceed it by at most MEMORY_ALLOWANCE_BYTES (eager on the H100: 1.46 GiB
  at batch 8 and 32); more is memory the column hides (the graphed step's pool: 6.4 GiB
  at batch 32 in the second GPU table). Issue 40's graphed strategies are held to a
  relative bound instead, the column within MEMORY_RELATIVE (5 %) of NVML's peak either way
  (memory_check_relative), as the issue states it; the column counts the graph's pool since
  (lib/device/device.h). The other phases keep the absolute allowance: their issues state no
  relative bound, and the eager H100 runs' context and workspaces alone were 20 % of NVML's
  peak at batch 32 (1.46 GiB of 7.3), which a 5 % bound would fail whatever the column held.
"""
import math
import statistics

MIN_TIMED_STEPS = 100
ENVELOPE_FACTOR = 3.0
SHARDED_DRIFT_MULTIPLE = 3.0
PIPELINE_DRIFT_MULTIPLE = 10.0
# A floor under a measured drift of exactly 0 (deterministic kernels): relative 1e-6.
DRIFT_FLOOR = 1e-6
# The fused engine's own rounding (one QKV GEMM, fused bias-GELU and LayerNorm kernels, bf16-resident
# weights round differently from autocast's per-op casts): a floor of 1e-3 relative under its
# envelope, half the old per-step bound, a fifth of a 0.5 % error. On the H100 it was 3.9e-4.
FUSED_FLOOR = 1e-3
# The strategies' own rounding where the baseline's drift is 0 (deterministic kernels, as every CPU
# run and --dry): bf16 sums in another order (reduce-scatter, shards) differ by rounding, not drift.
# Per-step median floors a tenth (sharded: 1e-4; CPU --dry zero/fsdp 4e-5) and three fifths
# (pipeline: 3e-3; CPU --dry 1.4e-3, H100 2.2e-3) of a 0.5 % error, and below the H100's bounds from
# its measured drift (1.1e-3 and 3.6e-3), so that they decide only where no drift was measured.
SHARDED_FLOOR = 1e-4
PIPELINE_FLOOR = 3e-3
MEMORY_ALLOWANCE_BYTES = 2048 << 20
MEMORY_RELATIVE = 0.05
SPIKE_FACTOR = 2.0
DRIFT_LIMIT = 0.05


# --- Student's t and Welch's test, as lib/stats/welch.cpp -------------------------------
def _beta_fraction(a, b, x):
    tiny, eps = 1e-300, 1e-16
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1001):
        m2 = 2.0 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def _incomplete_beta(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def t_two_sided_p(t, df):
    if math.isinf(t):
        return 0.0
    return min(1.0, max(0.0, _incomplete_beta(df / 2, 0.5, df / (df + t * t))))


def t_quantile(q, df):
    target, lo, hi = 2 * (1 - q), 0.0, 1.0
    while t_two_sided_p(hi, df) > target and hi < 1e300:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return (lo + hi) / 2


def welch_log(x, y, level=0.95):
    """Welch's t-test on log x against log y: {p, ratio, lo, hi, df} (ratio of geometric
    means with the test's interval); None where a side has fewer than 2 values or neither
    has spread."""
    if len(x) < 2 or len(y) < 2 or min(x) <= 0 or min(y) <= 0:
        return None
    lx, ly = [math.log(v) for v in x], [math.log(v) for v in y]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    v1, v2 = statistics.variance(lx) / len(x), statistics.variance(ly) / len(y)
    se = math.sqrt(v1 + v2)
    if se == 0:
        return None
    df = (v1 + v2) ** 2 / (v1 * v1 / (len(x) - 1) + v2 * v2 / (len(y) - 1))
    t = (mx - my) / se
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return {"t": t, "df": df, "p": t_two_sided_p(t, df), "ratio": math.exp(mx - my),
            "lo": math.exp(mx - my - half), "hi": math.exp(mx - my + half)}


# --- Speed: interleaved repeats -----------------------------------------------------------
def interleaved(order):
    """True for baseline, candidate, baseline, ... ending on the baseline, with at least two
    candidate runs: each candidate run sits between two baseline runs."""
    if len(order) < 5 or len(order) % 2 == 0:
        return False
    return all(side == ("baseline" if i % 2 == 0 else "candidate") for i, side in enumerate(order))


def spikes(step_ms, factor=SPIKE_FACTOR):
    """The timed steps over factor x the run's median, by index."""
    med = statistics.median(step_ms)
    return [i for i, v in enumerate(step_ms) if v > factor * med]


def compare_speed(runs, batch, min_steps=MIN_TIMED_STEPS):
    """runs: [{"side": "baseline"|"candidate", "name", "step_ms": [timed steps]}] in the order
    they ran. Returns figures and checks (name, ok, detail): the order interleaved, enough
    steps, no drift of the baseline between its first and last run, and the comparison
    (candidate over baseline samples/s by the runs' median steps, Welch's interval)."""
    checks, out = [], {"runs": []}
    order = [r["side"] for r in runs]
    checks.append(("runs interleaved (baseline, candidate, ..., baseline)", interleaved(order), " ".join(order)))
    for r in runs:
        med = statistics.median(r["step_ms"])
        out["runs"].append({"name": r["name"], "side": r["side"], "steps": len(r["step_ms"]), "step_ms_median": med,
                            "samples_per_s": batch / med * 1000, "spikes": len(spikes(r["step_ms"]))})
    short = [f"{r['name']} {r['steps']}" for r in out["runs"] if r["steps"] < min_steps]
    checks.append((f"at least {min_steps} timed steps a run", not short, ", ".join(short) or "all"))
    base = [r["samples_per_s"] for r in out["runs"] if r["side"] == "baseline"]
    cand = [r["samples_per_s"] for r in out["runs"] if r["side"] == "candidate"]
    if len(base) >= 2:
        out["baseline_drift"] = base[-1] / base[0] - 1
        checks.append((f"baseline steady across the call (first against last run within {100 * DRIFT_LIMIT:.0f} %)",
                       abs(out["baseline_drift"]) <= DRIFT_LIMIT, f"{100 * out['baseline_drift']:+.1f} %"))
    w = welch_log(cand, base)
    out["comparison"] = w
    if w is None:
        checks.append(("candidate against baseline: Welch's t on log samples/s", False, "too few runs or no spread"))
    else:
        out["spikes"] = sum(r["spikes"] for r in out["runs"])
        verdict = "faster" if w["lo"] > 1 else "slower" if w["hi"] < 1 else "not distinguishable"
        out["verdict"] = verdict
        checks.append(("candidate against baseline: Welch's t on log samples/s", True,
                       f"{w['ratio']:.3f}x [{w['lo']:.3f}, {w['hi']:.3f}], p = {w['p']:.3g}: {verdict}; "
                       f"{out['spikes']} step(s) over {SPIKE_FACTOR:g}x their run's median"))
    return out, checks


# --- Losses: the envelope of eager repeats ------------------------------------------------
def loss_statistics(losses, reference):
    """Relative distance of losses from the reference curve: the median over the steps, and
    that of the mean of the last 10 steps."""
    n = min(len(losses), len(reference))
    if n == 0:
        return None
    per_step = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses[:n], reference[:n])]
    k = min(10, n)
    last = sum(losses[n - k:n]) / k
    ref_last = sum(reference[n - k:n]) / k
    return {"median": statistics.median(per_step), "last10": abs(last - ref_last) / max(abs(ref_last), 1e-12),
            "max": max(per_step)}


def eager_envelope(repeats):
    """From two or more eager repeats' curves: the per-step median curve and the two
    statistics of each repeat against it (their largest: the eager spread)."""
    if len(repeats) < 2:
        raise ValueError(f"an envelope needs at least two eager repeats, got {len(repeats)}")
    n = min(len(r) for r in repeats)
    median = [statistics.median(r[i] for r in repeats) for i in range(n)]
    stats = [loss_statistics(r, median) for r in repeats]
    # With two repeats each sits half their distance from the median: the spread of one
    # draw against another is twice that.
    scale = 2.0 if len(repeats) == 2 else 1.0
    return {"median": median, "spread": {k: max(scale * s[k] for s in stats) for k in ("median", "last10", "max")}}


def envelope_check(losses, envelope, factor=ENVELOPE_FACTOR, floor=DRIFT_FLOOR):
    """The candidate's two statistics against factor x the eager spread's (or the floor, for
    a candidate that rounds differently by design, FUSED_FLOOR): (ok, detail)."""
    s = loss_statistics(losses, envelope["median"])
    parts, ok = [], True
    for k in ("median", "last10"):
        bound = max(factor * max(envelope["spread"][k], DRIFT_FLOOR), floor)
        ok &= s[k] <= bound
        parts.append(f"{'per-step median' if k == 'median' else 'last-10 mean'} {s[k]:.2e} <= {bound:.2e}")
    return ok, "; ".join(parts) + f" ({factor:g} x the eager repeats' own; largest step {s['max']:.2e})"


def sharded_bound(baseline_drift, pipeline=False):
    """The loss bound of a sharded (or pipelined) strategy from the baseline's measured drift
    (the statistics of its repeat against it): a stated multiple, per statistic."""
    m = PIPELINE_DRIFT_MULTIPLE if pipeline else SHARDED_DRIFT_MULTIPLE
    floor = PIPELINE_FLOOR if pipeline else SHARDED_FLOOR
    return {k: max(m * max(v, DRIFT_FLOOR), floor) for k, v in baseline_drift.items() if k in ("median", "last10")}, m


def sharded_check(losses, baseline, baseline_drift, pipeline=False):
    s = loss_statistics(losses, baseline)
    bound, m = sharded_bound(baseline_drift, pipeline)
    ok = all(s[k] <= bound[k] for k in bound)
    return ok, (f"per-step median {s['median']:.2e} <= {bound['median']:.2e}, last-10 mean {s['last10']:.2e} <= "
                f"{bound['last10']:.2e} ({m:g} x the baseline's own drift, at least the rounding floor; largest step "
                f"{s['max']:.2e})")


# --- Memory --------------------------------------------------------------------------------
def memory_check(column_bytes, nvml_bytes, allowance=MEMORY_ALLOWANCE_BYTES):
    """The table's memory column against NVML's process peak: (ok, detail)."""
    if not nvml_bytes or nvml_bytes <= 0:
        return False, "no NVML peak recorded"
    gap = nvml_bytes - column_bytes
    ok = column_bytes <= nvml_bytes and gap <= allowance
    return ok, (f"column {column_bytes / 2**20:.0f} MiB, NVML {nvml_bytes / 2**20:.0f} MiB: NVML above by "
                f"{gap / 2**20:.0f} MiB (at most {allowance / 2**20:.0f} MiB: context, workspaces, NCCL)")


def memory_check_relative(column_bytes, nvml_bytes, bound=MEMORY_RELATIVE):
    """The memory column within `bound` of NVML's process peak, as a fraction of NVML's, on
    either side (issue 40's graphed strategies): (ok, detail)."""
    if not nvml_bytes or nvml_bytes <= 0:
        return False, "no NVML peak recorded"
    off = (column_bytes - nvml_bytes) / nvml_bytes
    return abs(off) <= bound, (f"column {column_bytes / 2**20:.0f} MiB, NVML {nvml_bytes / 2**20:.0f} MiB: "
                               f"{100 * off:+.1f} % (at most {100 * bound:.0f} % either way)")
