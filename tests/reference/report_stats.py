"""Reference statistics for tests/report: numpy's percentiles and sample
standard deviation on random timing-like samples, which users reproduce
from run.json with numpy."""
import json
import os

import numpy as np

rng = np.random.default_rng(7)
cases = []
for n in (1, 2, 3, 10, 101):
    v = rng.lognormal(mean=3.0, sigma=0.4, size=n)
    cases.append({
        "values": v.tolist(),
        "mean": float(np.mean(v)),
        "stddev": float(np.std(v, ddof=1)) if n > 1 else 0.0,
        "median": float(np.percentile(v, 50)),
        "p90": float(np.percentile(v, 90)),
        "min": float(np.min(v)),
        "max": float(np.max(v)),
    })
out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "report_stats.json")
with open(out, "w") as f:
    json.dump(cases, f)
print(f"wrote {len(cases)} cases to {out}")

# --- Statistics of repeated runs (lib/stats/stats.h) -------------------------
# The bootstrap is re-implemented here from its definition: the same SplitMix64
# stream (index = next() % n, the numerator's indices first), the statistic
# by numpy, the interval by numpy's linear percentiles. scipy.stats.bootstrap
# (percentile method, its own random stream) is the independent check that
# the definition is the usual one; its bounds agree within resampling error.
import scipy
from scipy import stats

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
SEED = 0x6870636265
RESAMPLES = 10000
LEVEL = 0.95


def splitmix(seed, count):
    with np.errstate(over="ignore"):
        k = np.arange(1, count + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def interval(point, boot, n):
    if n < 2:
        return [point, point, point]
    tail = (1 - LEVEL) / 2
    return [point, float(np.percentile(boot, 100 * tail)), float(np.percentile(boot, 100 * (1 - tail)))]


def median_interval(v):
    v = np.asarray(v)
    n = len(v)
    if n < 2:
        return interval(float(np.median(v)), None, n)
    idx = (splitmix(SEED, RESAMPLES * n) % np.uint64(n)).astype(np.int64).reshape(RESAMPLES, n)
    return interval(float(np.median(v)), np.median(v[idx], axis=1), n)


def ratio_interval(a, b):
    a, b = np.asarray(a), np.asarray(b)
    n1, n2 = len(a), len(b)
    point = float(np.median(a) / np.median(b))
    if min(n1, n2) < 2:
        return interval(point, None, 1)
    draws = splitmix(SEED, RESAMPLES * (n1 + n2)).reshape(RESAMPLES, n1 + n2)
    ia = (draws[:, :n1] % np.uint64(n1)).astype(np.int64)
    ib = (draws[:, n1:] % np.uint64(n2)).astype(np.int64)
    return interval(point, np.median(a[ia], axis=1) / np.median(b[ib], axis=1), min(n1, n2))


def outliers(v, k=3.0):
    v = np.asarray(v)
    scale = stats.median_abs_deviation(v, scale="normal")
    if not scale > 0:
        return []
    return [int(i) for i in np.nonzero(np.abs(v - np.median(v)) > k * scale)[0]]


def drift(v):
    t = len(v) // 3
    if t == 0:
        return 0.0
    return float(np.median(v[-t:]) / np.median(v[:t]) - 1)


def scipy_interval(v):
    if len(v) < 2 or np.ptp(v) == 0:
        return None
    r = stats.bootstrap((np.asarray(v),), np.median, n_resamples=RESAMPLES, confidence_level=LEVEL,
                        method="percentile", rng=np.random.default_rng(1))
    return [float(r.confidence_interval.low), float(r.confidence_interval.high)]


def mwu(x, y):
    r = stats.mannwhitneyu(x, y, alternative="two-sided")
    return {"u": float(r.statistic), "p": float(r.pvalue)}


rng = np.random.default_rng(13)
samples = {
    "one repeat": [123.4],
    "two": [100.0, 104.0],
    "three": list(rng.normal(100, 5, 3)),
    "three, one noisy": [100.2, 99.1, 71.5],
    "identical": [42.0, 42.0, 42.0],
    "five": list(rng.normal(200, 20, 5)),
    "ten": list(rng.lognormal(4, 0.2, 10)),
    "forty steps, drifting": list(np.linspace(10, 14, 40) + rng.normal(0, 0.3, 40)),
    "thirty": list(rng.normal(50, 4, 30)),
}
single = []
for name, v in samples.items():
    a = np.asarray(v)
    single.append({
        "name": name, "values": [float(x) for x in a],
        "median": float(np.median(a)),
        "mad": float(stats.median_abs_deviation(a)),
        "cv": float(stats.variation(a, ddof=1)) if len(a) > 1 else 0.0,
        "outliers": outliers(a),
        "drift": drift(a),
        "median_interval": median_interval(a),
        "scipy_interval": scipy_interval(a),
    })
pairs = []
for num, den in [("three", "three, one noisy"), ("five", "three"), ("ten", "thirty"), ("one repeat", "three"),
                 ("identical", "three"), ("three", "identical"), ("identical", "identical"), ("two", "five"),
                 ("thirty", "forty steps, drifting")]:
    pairs.append({"num": num, "den": den, "ratio_interval": ratio_interval(samples[num], samples[den]),
                  "mwu": mwu(samples[num], samples[den])})
# Fully separated small samples: the exact test's smallest p-values.
for x, y in [([1.0, 2, 3], [4.0, 5, 6]), ([1.0, 2, 3, 4], [5.0, 6, 7, 8]), ([1.0, 5, 2], [4.0, 3, 6, 7, 9]),
             ([1.0, 2, 2], [2.0, 3, 4])]:
    samples[f"mwu {x}"], samples[f"mwu {y}"] = x, y
    pairs.append({"num": f"mwu {x}", "den": f"mwu {y}", "ratio_interval": ratio_interval(x, y), "mwu": mwu(x, y)})
out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "report_repeat_stats.json")
with open(out, "w") as f:
    json.dump({"scipy": scipy.__version__, "resamples": RESAMPLES, "level": LEVEL, "seed": SEED,
               "samples": samples, "single": single, "pairs": pairs}, f, indent=1)
print(f"wrote {len(single)} samples and {len(pairs)} pairs to {out}")

# --- The verdict test (lib/stats/welch.h) ------------------------------------
# scipy.stats.ttest_ind on the logs with equal_var=False: Welch's t, its
# degrees of freedom, the two-sided p-value and the 95 % interval of the
# difference of mean logs (exponentiated: the ratio of geometric means).
def welch(x, y):
    lx, ly = np.log(x), np.log(y)
    r = stats.ttest_ind(lx, ly, equal_var=False)
    ci = r.confidence_interval(0.95)
    return {"x": list(map(float, x)), "y": list(map(float, y)), "t": float(r.statistic), "df": float(r.df),
            "p": float(r.pvalue), "ratio": float(np.exp(lx.mean() - ly.mean())),
            "lo": float(np.exp(ci.low)), "hi": float(np.exp(ci.high))}


rng = np.random.default_rng(42)
welch_cases = [welch(samples[a], samples[b]) for a, b in
               [("three", "three, one noisy"), ("five", "three"), ("ten", "thirty"), ("two", "five")]]
welch_cases += [welch(rng.lognormal(np.log(100), s, n), rng.lognormal(np.log(100 * (1 + e)), s, m))
                for n, m, s, e in [(3, 3, 0.03, 0.10), (3, 3, 0.05, 0.0), (5, 5, 0.03, 0.05), (10, 10, 0.1, 0.1),
                                   (2, 2, 0.02, 0.2), (3, 7, 0.04, 0.0), (4, 3, 0.001, 0.0005)]]
# One side without spread: df from the other (scipy's).
welch_cases.append(welch([100.0, 110.0, 120.0], [200.0, 200.0, 200.0]))
# Student's t quantiles at fractional degrees of freedom (the interval's).
quantiles = [{"q": q, "df": df, "t": float(stats.t.ppf(q, df))}
             for q in (0.975, 0.995, 0.9, 0.025) for df in (1.0, 1.01, 2.0, 3.77, 8.0, 30.5, 200.0)]
out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "report_welch.json")
with open(out, "w") as f:
    json.dump({"scipy": scipy.__version__, "welch": welch_cases, "quantiles": quantiles}, f, indent=1)
print(f"wrote {len(welch_cases)} Welch cases and {len(quantiles)} quantiles to {out}")

# --- A run's step figures (lib/stats/steps.h) ---------------------------------
# Median, minimum, interquartile range by numpy's percentiles; outlier steps:
# more than 3 normal-scaled MADs (scipy) and at least 20 % from the median.
def step_figures(v):
    v = np.asarray(v, dtype=float)
    med = float(np.median(v))
    scale = stats.median_abs_deviation(v, scale="normal")
    out = [int(i) for i in np.nonzero((np.abs(v - med) > 3 * scale) & (np.abs(v - med) >= 0.2 * med))[0]] \
        if scale > 0 else []
    return {"steps": v.tolist(), "median": med, "min": float(v.min()),
            "iqr": float(np.percentile(v, 75) - np.percentile(v, 25)), "outliers": out}


rng = np.random.default_rng(5)
steady = rng.normal(30, 0.15, 100)          # a GPU's steps: 0.5 % spread, no outliers at 20 %
spiky = steady.copy()
spiky[[7, 61]] = [90.0, 45.0]               # a 3x and a 1.5x spike
cpu = rng.lognormal(np.log(120), 0.08, 15)  # a loaded CPU's 15 timed steps
cpu[4] = 400.0
step_cases = [step_figures(v) for v in (steady, spiky, cpu, [10.0, 10.0, 10.0, 31.0], [5.0])]
out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "report_steps.json")
with open(out, "w") as f:
    json.dump(step_cases, f, indent=1)
print(f"wrote {len(step_cases)} step series to {out}")
