"""The readers PyTorch and Lightning users pull SummaryWriter logs into pandas
with see every run's step scalars: EventAccumulator(...).Scalars (the
non-plugin accumulator, which reads simple_value only) and tbparse's
SummaryReader(...).scalars give run.json's losses at run.json's steps, to the
bit after float32 rounding (every TensorBoard scalar is a float32).
Usage: test_pytorch_readers.py WORK"""
import json
import os
import sys

import numpy as np
from tbparse import SummaryReader
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tbread import check

work = sys.argv[1]
results = os.path.join(work, "results")
runs = sorted(d for d in os.listdir(results) if not d.startswith("."))
check(runs, f"no runs in {results}")
for run in runs:
    folder = os.path.join(results, run)
    with open(os.path.join(folder, "run.json")) as f:
        steps = json.load(f)["steps"]
    want = [(s["step"], float(np.float32(s["loss"]))) for s in steps]
    check(len(want) >= 2, f"{run}: {len(want)} steps in run.json")

    acc = EventAccumulator(folder)
    acc.Reload()
    check("train/loss" in acc.Tags()["scalars"], f"{run}: EventAccumulator's scalars {acc.Tags()['scalars']}")
    got = [(e.step, e.value) for e in acc.Scalars("train/loss")]
    check(got == want, f"{run}: EventAccumulator: {got} != run.json {want}")

    df = SummaryReader(folder).scalars
    loss = df[df["tag"] == "train/loss"]
    got = [(int(st), float(np.float32(v))) for st, v in zip(loss["step"], loss["value"])]
    check(got == want, f"{run}: tbparse: {got} != run.json {want}")
    # The same tags through both readers: nothing written only in the plugin form.
    check(set(df["tag"]) == set(acc.Tags()["scalars"]), f"{run}: tbparse {set(df['tag'])} != {acc.Tags()['scalars']}")
    print(f"{run}: {len(got)} losses equal to run.json's through EventAccumulator and tbparse")
print("OK")
