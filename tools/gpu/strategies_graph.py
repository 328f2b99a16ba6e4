"""Checks of tools/gpu/validate.sh's strategies-graph phase: every strategy that
declares --cuda-graph, graphed at world size 1 (--keep-collectives) and interleaved
with the graphed baseline (B, S..., B, S..., B), against the bounds of issue 40:

- overhead over the graphed baseline (median of the repeats' median steps): at most
  3 % for ddp, zero 1/2, fsdp grad-op and tensor, at most 5 % for zero 3 and fsdp full;
- run-to-run spread (max - min over the median, per side's repeats) at most 2 %;
- losses inside the eager envelope: at every step within twice the largest distance
  between two eager baseline runs of the same batches (attention's backward sums with
  atomics, so eager drifts from itself) of their mean;
- the graph captured (run.json's cuda_graph says "captured").

  strategies_graph.py WORK OUT.json --strategies a,b,... --repeats N [--dry]

Under --dry (a CPU, bert-tiny, nothing captured) the figures are computed and written
and only the structure is checked: every run present, finite losses, the graph-ready
step reported as not captured on the CPU."""
import argparse
import csv
import json
import math
import os
import statistics

BOUND = {"ddp": 0.03, "zero1": 0.03, "zero2": 0.03, "fsdp-grad-op": 0.03, "tensor": 0.03,
         "zero3": 0.05, "fsdp-full": 0.05}
SPREAD = 0.02


def read(work, name):
    folder = os.path.join(work, "runs", name)
    with open(os.path.join(folder, "summary.csv")) as f:
        row = next(csv.DictReader(f))
    with open(os.path.join(folder, "run.json")) as f:
        rj = json.load(f)
    return {"step_ms_median": float(row["step_ms_median"]),
            "losses": [float(s["loss"]) for s in rj.get("steps", [])],
            "cuda_graph": str(rj.get("result", {}).get("cuda_graph", ""))}


def check(name, ok, detail):
    return {"name": name, "ok": bool(ok), "detail": detail}


def spread(xs):
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("out")
    ap.add_argument("--strategies", required=True)
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--dry", action="store_true")
    a = ap.parse_args()
    names = a.strategies.split(",")
    res = {"phase": "strategies-graph", "rows": [], "checks": []}
    eager = [read(a.work, f"sg-eager-{i}") for i in range(2)]
    base = [read(a.work, f"sg-baseline-{i}") for i in range(a.repeats + 1)]
    drift = max(abs(x - y) for x, y in zip(eager[0]["losses"], eager[1]["losses"]))
    mean = [(x + y) / 2 for x, y in zip(eager[0]["losses"], eager[1]["losses"])]
    base_ms = statistics.median(r["step_ms_median"] for r in base)
    res["baseline"] = {"step_ms_medians": [r["step_ms_median"] for r in base], "spread": spread([r["step_ms_median"] for r in base]),
                       "eager_drift": drift}
    captured = "not captured: cpu" if a.dry else "captured"

    def judge(label, runs, bound):
        ms = [r["step_ms_median"] for r in runs]
        row = {"strategy": label, "step_ms_medians": ms, "spread": spread(ms)}
        worst = max(max(abs(l - m) for l, m in zip(r["losses"], mean)) if len(r["losses"]) == len(mean) else math.inf
                    for r in runs)
        row["loss_max_abs_diff"] = worst
        finite = all(math.isfinite(l) for r in runs for l in r["losses"]) and all(len(r["losses"]) == len(mean) for r in runs)
        res["checks"].append(check(f"{label}: every step's loss finite, as many steps as eager", finite, ""))
        res["checks"].append(check(f"{label}: the graph-ready step ran as {captured!r}",
                                   all(r["cuda_graph"].startswith(captured) for r in runs),
                                   ", ".join(r["cuda_graph"] for r in runs)))
        if bound is not None:
            row["overhead"] = statistics.median(ms) / base_ms - 1
        if a.dry:
            return row
        res["checks"].append(check(f"{label}: run-to-run spread at most {100 * SPREAD:.0f} %", row["spread"] <= SPREAD,
                                   f"{100 * row['spread']:.2f} % over {len(ms)} repeats"))
        res["checks"].append(check(f"{label}: losses inside the eager envelope", worst <= 2 * drift,
                                   f"max |loss - eager mean| {worst:.3e} against 2 x eager drift {2 * drift:.3e}"))
        if bound is not None:
            res["checks"].append(check(f"{label}: overhead over the graphed baseline at most {100 * bound:.0f} %",
                                       row["overhead"] <= bound, f"{100 * row['overhead']:+.2f} %"))
        return row

    res["rows"].append(judge("baseline", base, None))
    for n in names:
        res["rows"].append(judge(n, [read(a.work, f"sg-{n}-{i}") for i in range(a.repeats)], BOUND[n]))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    bad = [c for c in res["checks"] if not c["ok"]]
    for c in res["checks"]:
        print(("ok   " if c["ok"] else "FAIL ") + c["name"] + (f" ({c['detail']})" if c["detail"] else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
