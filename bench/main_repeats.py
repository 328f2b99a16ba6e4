"""The main job's repeat count from its measured run-to-run spread (docs/statistics.md, "The
repeat counts"): the spread of log throughput over each row's repeats in the README's main-job
table, and what Welch's t-test on log throughput (the report's verdict test, as
scipy.stats.ttest_ind(equal_var=False)) calls at that spread: the share of pairs with a real
difference called, the right way round, and the false-positive rate, at 3, 4 and 5 repeats.

  $V/bin/python bench/main_repeats.py [--pairs 20000] [--spread S]

The README's table (tools/hpcb main on a fresh clone, 2026-11-26, this project's 2-core machine
while idle, 3 repeats each) prints each row's median and its 95 % percentile-bootstrap interval;
for a median of 3 that interval is the range (each end is drawn with probability 7/27, far above
2.5 %), so the three repeats are the interval's ends and the median. --spread S costs out another
spread instead (0.20: the README's loaded run, whose Welch intervals of +-0.45 in log at 3 runs a
side put each run's spread near 20 %)."""
import argparse

import numpy as np
from scipy import stats

# run: (low, median, high) seq/s, README.md's main-job table.
IDLE_TABLE = {"baseline-1x": (116.46, 123.28, 126.17), "dp-2x": (158.04, 158.60, 161.83),
              "ddp-2x": (134.00, 136.03, 142.72), "fsdp-2x": (101.58, 101.99, 102.55),
              "zero-2x": (107.72, 117.84, 118.73)}


def called(rng, sigma, n, effect, pairs):
    """Share of pairs the test calls significant at 5 % with the faster side first."""
    a = rng.normal(np.log1p(effect), sigma, (pairs, n))
    b = rng.normal(0.0, sigma, (pairs, n))
    t, p = stats.ttest_ind(a, b, axis=1, equal_var=False)
    return float(np.mean((p < 0.05) & (t > 0))) if effect else float(np.mean(p < 0.05))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--spread", type=float, default=0.0, help="a run-to-run spread (sd of log throughput) to use")
    a = ap.parse_args()
    if a.pairs < 100:
        ap.error(f"--pairs {a.pairs}: at least 100")
    if a.spread < 0:
        ap.error(f"--spread {a.spread}: must be positive")
    sigma = a.spread
    if not sigma:
        var = {k: np.var(np.log(v), ddof=1) for k, v in IDLE_TABLE.items()}
        for k, v in var.items():
            print(f"{k:<12} spread {100 * np.sqrt(v):.1f} %")
        sigma = float(np.sqrt(np.mean(list(var.values()))))
        print(f"pooled       spread {100 * sigma:.2f} %")
    rng = np.random.default_rng(42)
    print(f"\nWelch's t on log throughput at a spread of {100 * sigma:.2f} % ({a.pairs} pairs each):")
    print("repeats | false positives | real 5 % called | real 10 % called | real 20 % called")
    for n in (3, 4, 5):
        row = [called(rng, sigma, n, e, a.pairs) for e in (0.0, 0.05, 0.10, 0.20)]
        print(f"{n:>7} | " + " | ".join(f"{x:.3f}" for x in row))


if __name__ == "__main__":
    main()
