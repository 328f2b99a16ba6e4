"""`report --tensorboard DIR`: the HParams plugin's summaries parse (with the
plugin's own protos) and list each configuration's hyperparameters and
metrics, equal to the runs' and the report's figures; repeats are the
configuration's steps. Usage: test_report_hparams.py WORK"""
import csv
import json
import math
import os
import sys

import numpy as np

from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

from tbread import check, read_run

work = sys.argv[1]
tb = os.path.join(work, "tb")
results = os.path.join(work, "results")
HPARAMS = ["strategy", "options", "devices", "nodes", "precision", "model", "seq_length", "batch_per_device",
           "global_batch", "device", "cuda_graph", "fused"]
# MFU is left out: no row has one (a CPU has no known peak).
METRICS = ["metrics/throughput", "metrics/speedup", "metrics/efficiency", "metrics/memory_gib_per_device",
           "metrics/comm_exposed_ms"]


def f32(x):
    return float(np.float32(x))


def plugin_data(acc, tag):
    meta = acc.SummaryMetadata(tag)
    check(meta.plugin_data.plugin_name == "hparams", f"{tag}: plugin {meta.plugin_data.plugin_name}")
    return plugin_data_pb2.HParamsPluginData.FromString(meta.plugin_data.content)


_, _, top = read_run(tb)
exp = plugin_data(top, "_hparams_/experiment").experiment
check([h.name for h in exp.hparam_infos] == HPARAMS, f"experiment hparams {[h.name for h in exp.hparam_infos]}")
check([m.name.tag for m in exp.metric_infos] == METRICS, f"experiment metrics {[m.name.tag for m in exp.metric_infos]}")
strategies = [v.string_value for v in next(h for h in exp.hparam_infos if h.name == "strategy").domain_discrete.values]
check(sorted(strategies) == ["baseline", "ddp"], f"strategy domain {strategies}")

with open(os.path.join(work, "report.csv")) as f:
    table = {r["run_id"]: r for r in csv.DictReader(f)}
runs = {}
for d in os.listdir(results):
    if not d.startswith("."):
        with open(os.path.join(results, d, "run.json")) as f:
            runs[d] = json.load(f)["result"]

folders = sorted(d for d in os.listdir(tb) if os.path.isdir(os.path.join(tb, d)))
check(folders == ["base", "ddp2"], f"configurations {folders}")
for folder in folders:
    series, plugins, acc = read_run(os.path.join(tb, folder))
    start = plugin_data(acc, "_hparams_/session_start_info").session_start_info
    end = plugin_data(acc, "_hparams_/session_end_info").session_end_info
    check(end.status == api_pb2.STATUS_SUCCESS, f"{folder}: status {end.status}")
    check(start.group_name == folder, f"{folder}: group {start.group_name}")
    hp = {k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}
    check(sorted(hp) == sorted(HPARAMS), f"{folder}: hparams {sorted(hp)}")
    repeats = sorted((r for r in runs.values() if r["run_id"] == folder or r["repeat_group"] == folder),
                     key=lambda r: r["repeat_index"])
    r0 = repeats[0]
    want = {"strategy": r0["strategy"], "options": r0["strategy_options"] or "-",
            "devices": float(max(r0["world_size"], r0["nodes"] * r0["gpus_per_node"])), "nodes": float(r0["nodes"]),
            "precision": r0["precision"], "model": r0["model"], "seq_length": float(r0["seq_length"]),
            "batch_per_device": float(r0["batch_per_device"]), "global_batch": float(r0["global_batch"]),
            "device": r0["device_name"] or r0["device"], "cuda_graph": r0.get("cuda_graph") or "-",
            "fused": float(r0.get("fused", 0))}
    check(hp == want, f"{folder}: hparams {hp} != the runs' {want}")
    # The report's row: the median repeat's id, its figures the group's.
    row = next(t for t in table.values() if t["run_id"] in {r["run_id"] for r in repeats})
    check(int(row["runs"]) == len(repeats), f"{folder}: {row['runs']} runs in the report, {len(repeats)} folders")
    median = runs[row["run_id"]]

    def metric(tag):
        s = series.get(tag)
        return s[-1][1] if s else None

    def close(a, b):
        return a is not None and math.isclose(a, float(b), rel_tol=1e-5, abs_tol=1e-6)

    check(close(metric("metrics/throughput"), row["samples_per_s"]), f"{folder}: throughput {metric('metrics/throughput')} vs {row['samples_per_s']}")
    check(close(metric("metrics/speedup"), row["speedup"]), f"{folder}: speedup {metric('metrics/speedup')} vs {row['speedup']}")
    check(close(metric("metrics/efficiency"), row["efficiency"]), f"{folder}: efficiency")
    check(close(metric("metrics/memory_gib_per_device"), int(row["peak_memory_bytes"]) / 2**30), f"{folder}: memory")
    check(metric("metrics/comm_exposed_ms") == f32(median["comm_exposed_ms"]), f"{folder}: exposed comm")
    check(metric("metrics/mfu") is None, f"{folder}: an MFU without a known peak")  # CPU: no peak, no MFU
    got = [(s, v) for s, v, _ in series["repeats/samples_per_s"]]
    check(got == [(i + 1, f32(r["samples_per_s"])) for i, r in enumerate(repeats)], f"{folder}: repeats {got}")
    print(f"{folder}: {len(hp)} hparams, {sum(t.startswith('metrics/') for t in series)} metrics")
print("OK")
