"""Reads TensorBoard event files with the `tensorboard` package, as
TensorBoard does, for the tests of this folder."""
import os
import subprocess
import sys

from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

BIN = os.environ.get("HPCBENCH_BIN", "hpcbench")
DATA = os.environ.get("HPCBENCH_TEST_DATA", "")

# Small CPU runs: bert-tiny, a few steps.
RUN_ARGS = ["run", "--device", "cpu", "--threads", "1", "--timing-warmup-steps", "2", "--synthetic-samples", "64",
            "--max-seq-length", "256", "--log-every", "100"]


def sh(args, merge=True, **kw):
    print("+", " ".join(str(a) for a in args), flush=True)
    r = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT if merge else None, text=True, **kw)
    if r.returncode != 0:
        print(r.stdout)
        sys.exit(f"exit {r.returncode}: {' '.join(str(a) for a in args)}")
    return r.stdout


def event_files(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("events.out.tfevents."))


def read_run(folder):
    """{tag: [(step, value, wall_time)]} and {tag: plugin name} of one run folder."""
    acc = pea.EventAccumulator(folder, size_guidance={pea.TENSORS: 0})
    acc.Reload()
    series, plugins = {}, {}
    for tag in acc.Tags()["tensors"]:
        plugins[tag] = acc.SummaryMetadata(tag).plugin_data.plugin_name
        out = []
        for e in acc.Tensors(tag):
            a = tensor_util.make_ndarray(e.tensor_proto)
            v = a.item() if a.size == 1 else a.tolist()
            out.append((e.step, v.decode() if isinstance(v, bytes) else v, e.wall_time))
        series[tag] = out
    return series, plugins, acc


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
