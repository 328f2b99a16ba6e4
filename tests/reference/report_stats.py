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
