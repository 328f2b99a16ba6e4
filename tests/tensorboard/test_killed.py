"""A run killed mid-way (SIGKILL, a long --max-steps) leaves its live event
file readable up to its last flush: steps 1..n, each with its loss, in
<results>/.running/<name>/. Usage: test_killed.py WORK"""
import math
import os
import shutil
import signal
import subprocess
import sys
import time

from tbread import BIN, RUN_ARGS, check, event_files, read_run

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
results = os.path.join(work, "results")
live = os.path.join(results, ".running", "long")
args = [BIN] + RUN_ARGS + ["--results-dir", results, "--max-steps", "1000000", "--batch-size", "2",
                           "--run-name", "long", "--sample-ms", "50"]
log = open(os.path.join(work, "run.log"), "w")
p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
seen = 0
try:
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        time.sleep(0.5)
        if os.path.isdir(live) and event_files(live):
            series, _, _ = read_run(live)
            seen = len(series.get("train/loss", []))
            if seen >= 3:
                break
    check(p.poll() is None, f"the run ended by itself (exit {p.returncode}); see {work}/run.log")
    check(seen >= 3, f"no 3 steps in the live file within 120 s (saw {seen})")
finally:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()
check(p.returncode == -signal.SIGKILL, f"exit {p.returncode}")

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
