"""A run killed mid-way (SIGKILL, a long --max-steps) leaves its live event
file readable up to its last flush: steps 1..n, each with its loss, in
<results>/.running/<name>/. A pipeline's rank 0 (the first stage) computes no
loss: its live file has no train/loss rather than zeros, and the finished
run's file has the job's loss. Usage: test_killed.py WORK"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

from tbread import BIN, RUN_ARGS, check, event_files, read_run, sh

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
results = os.path.join(work, "results")
log = open(os.path.join(work, "run.log"), "w")


def kill_after(name, extra, tag, steps=3):
    """Starts a long run, SIGKILLs it once its live file holds `steps` steps
    of `tag`; returns the live folder, the steps seen and the exit status."""
    live = os.path.join(results, ".running", name)
    p = subprocess.Popen([BIN] + RUN_ARGS + extra + ["--results-dir", results, "--max-steps", "1000000",
                                                     "--run-name", name],
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    seen = 0
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.5)
            if os.path.isdir(live) and event_files(live):
                series, _, _ = read_run(live)
                seen = len(series.get(tag, []))
                if seen >= steps:
                    break
        check(p.poll() is None, f"{name}: the run ended by itself (exit {p.returncode}); see {work}/run.log")
        check(seen >= steps, f"{name}: no {steps} steps in the live file within 120 s (saw {seen})")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    return live, seen, p.returncode


live, seen, status = kill_after("long", ["--batch-size", "2", "--sample-ms", "50"], "train/loss")
check(status == -signal.SIGKILL, f"exit {status}")

files = event_files(live)
check(len(files) == 1, f"live files {files}")
series, plugins, _ = read_run(live)
loss = series["train/loss"]
steps = [s for s, _, _ in loss]
check(len(steps) >= seen and steps == list(range(1, len(steps) + 1)), f"steps {steps[:10]}... ({len(steps)})")
check(all(math.isfinite(v) and v > 0 for _, v, _ in loss), "losses")
for tag in ("train/lr", "perf/step_ms", "perf/samples_per_s"):
    check([s for s, _, _ in series[tag]][: len(steps) - 1] == steps[:-1], f"{tag} steps")
check(plugins["run/settings"] == "text", "settings")
check(not os.path.exists(os.path.join(results, "long")), "a killed run has no results folder")
print(f"OK: {len(steps)} steps readable after SIGKILL ({seen} seen before it)")

# A two-stage pipeline, killed once its live file has 3 steps.
pipeline = ["--strategy", "pipeline", "--stages", "2", "--micro-batches", "2", "--nproc-per-node", "2",
            "--batch-size", "2"]
live, _, _ = kill_after("pipe", pipeline, "perf/step_ms")
series, _, _ = read_run(live)
check("train/loss" not in series, f"pipeline: rank 0 wrote a loss it does not compute: {series.get('train/loss')}")
check(len(series["perf/step_ms"]) >= 3, "pipeline: step times")

# Finished, the file holds the job's loss (the last stage's), as run.json does.
sh([BIN] + RUN_ARGS + pipeline + ["--results-dir", results, "--max-steps", "3", "--run-name", "pipe-done"])
with open(os.path.join(results, "pipe-done", "run.json")) as f:
    want = [(s["step"], s["loss"]) for s in json.load(f)["steps"]]
series, _, _ = read_run(os.path.join(results, "pipe-done"))
got = [(st, v) for st, v, _ in series["train/loss"]]
check([st for st, _ in got] == [st for st, _ in want] and
      all(math.isclose(a, b, rel_tol=1e-6) and b > 0 for (_, a), (_, b) in zip(got, want)),
      f"pipeline: train/loss {got} != run.json {want}")
print(f"OK: a pipeline's live file has no loss from its first stage; finished, the job's {len(got)} losses")
