"""Every run folder's event file, read with TensorBoard's own reader, holds
run.json's figures: every tag, step and value equal (TensorBoard's scalars
are float32: run.json's value rounded to float32, to the bit),
the device samples of utilisation.csv at their own times, the evaluation, the
settings; `--tensorboard off` writes none. Usage: test_run_events.py WORK"""
import csv
import json
import os
import sys

import numpy as np

from tbread import BIN, RUN_ARGS, check, event_files, read_run, sh

work = sys.argv[1]
results = os.path.join(work, "results")
runs = sorted(d for d in os.listdir(results) if not d.startswith("."))
check(runs == ["base", "ddp2-r1", "ddp2-r2"], f"run folders {runs}")
# A finished run leaves nothing in the live folder.
live = os.path.join(results, ".running")
check(not os.path.exists(live), f"{live} left behind")

def f32(x):
    return float(np.float32(x))


STEP_KEYS = {"train/loss": "loss", "train/lr": "lr", "train/grad_norm": "grad_norm", "perf/step_ms": "ms",
             "perf/comm_ms": "comm_ms", "perf/comm_exposed_ms": "comm_exposed_ms"}

for run in runs:
    folder = os.path.join(results, run)
    check(len(event_files(folder)) == 1, f"{run}: one event file, found {event_files(folder)}")
    with open(os.path.join(folder, "run.json")) as f:
        j = json.load(f)
    steps, res = j["steps"], j["result"]
    series, plugins, _ = read_run(folder)
    want_steps = [s["step"] for s in steps]
    check(len(want_steps) == 6, f"{run}: 6 steps in run.json")
    for tag, key in STEP_KEYS.items():
        check(tag in series, f"{run}: tag {tag} missing; have {sorted(series)}")
        check(plugins[tag] == "scalars", f"{run}: {tag} is a {plugins[tag]} summary")
        got = [(st, v) for st, v, _ in series[tag]]
        want = [(s["step"], f32(s[key])) for s in steps]
        check(got == want, f"{run}: {tag}: {got} != run.json {want}")
    sps = [(st, v) for st, v, _ in series["perf/samples_per_s"]]
    check(sps == [(s["step"], f32(1000.0 * res["global_batch"] / s["ms"])) for s in steps], f"{run}: samples/s {sps}")
    mem = [v for _, v, _ in series["perf/peak_memory_bytes"]]
    check([st for st, _, _ in series["perf/peak_memory_bytes"]] == want_steps, f"{run}: memory steps")
    check(mem == sorted(mem) and 0 < mem[-1] <= f32(j["rank_peak_memory_bytes"][0]),
          f"{run}: peak memory {mem} against run.json's {j['rank_peak_memory_bytes']}")
    # Each step at the time it ended: increasing wall times.
    walls = [w for _, _, w in series["train/loss"]]
    check(walls == sorted(walls) and walls[0] > 1.6e9, f"{run}: wall times {walls}")

    # utilisation.csv's samples, each at its own time (step: ms since sampling began).
    with open(os.path.join(folder, "utilisation.csv")) as f:
        rows = list(csv.DictReader(f))
    check(rows, f"{run}: no samples")
    hosts = {r["host"] for r in rows}
    want_dev = {}
    for r in rows:
        dev = ("gpu" if r["kind"] == "gpu" else "cpu_rank") + r["index"]
        prefix = f"device/{r['host']}/{dev}" if len(hosts) > 1 else f"device/{dev}"
        for col, name in (("util_percent", "utilisation_percent"), ("memory_bytes", "memory_bytes"),
                          ("power_w", "power_w")):
            if r[col]:
                want_dev.setdefault(f"{prefix}/{name}", []).append((round(float(r["time_s"]) * 1000), f32(r[col])))
    got_dev = {t: [(st, v) for st, v, _ in s] for t, s in series.items() if t.startswith("device/")}
    check(got_dev == want_dev, f"{run}: device series {sorted(got_dev)} != utilisation.csv's {sorted(want_dev)}")
    check(any(t.endswith("/utilisation_percent") for t in got_dev), f"{run}: no utilisation")

    evals = {t: s for t, s in series.items() if t.startswith("eval/")}
    if run == "base":
        for tag, key in (("eval/loss", "val_loss"), ("eval/exact_match", "exact_match"), ("eval/f1", "f1")):
            check(res[key] >= 0, f"{run}: run.json has no {key}")
            check([(st, v) for st, v, _ in evals.get(tag, [])] == [(6, f32(res[key]))],
                  f"{run}: {tag} {evals.get(tag)} != run.json {res[key]}")
    else:
        check(not evals, f"{run}: evaluation tags without evaluation: {sorted(evals)}")

    check(plugins.get("run/settings") == "text", f"{run}: settings as text")
    text = series["run/settings"][0][1]
    check(f"| train.strategy | {j['config']['train.strategy']} |" in text and "| run.tensorboard | on |" in text,
          f"{run}: settings text {text[:300]}")
    expected = set(STEP_KEYS) | {"perf/samples_per_s", "perf/peak_memory_bytes", "run/settings"} | set(got_dev) | set(evals)
    check(set(series) == expected, f"{run}: unexpected tags {set(series) - expected}")
    print(f"{run}: {len(series)} tags equal to run.json's and utilisation.csv's")

off = os.path.join(work, "off")
sh([BIN] + RUN_ARGS + ["--results-dir", off, "--max-steps", "2", "--batch-size", "2", "--run-name", "off",
                       "--tensorboard", "off"])
check(event_files(os.path.join(off, "off")) == [] and not os.path.exists(os.path.join(off, ".running")),
      "--tensorboard off wrote event files")
bad = __import__("subprocess").run([BIN] + RUN_ARGS + ["--results-dir", off, "--max-steps", "2", "--tensorboard", "yes"],
                                   capture_output=True, text=True)
check(bad.returncode != 0 and "--tensorboard yes" in bad.stderr, f"--tensorboard yes: {bad.returncode} {bad.stderr[-300:]}")
print("OK")
