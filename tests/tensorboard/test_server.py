"""`tensorboard --logdir` over a report's folder, on 127.0.0.1 and a free
port: its HTTP API lists the configurations as runs, one run's scalar tags,
and the HParams plugin's hyperparameters and metrics of each configuration.
Every wait is bounded and the server is always killed.
Usage: test_server.py WORK"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from tbread import check

work = sys.argv[1]
tb = os.path.join(work, "tb")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, request=None, timeout=10):
    url = f"http://127.0.0.1:{port}{path}"
    if request is not None:
        url += "?request=" + urllib.parse.quote(json.dumps(request))
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


port = free_port()
log = open(work + "-tensorboard.log", "w")
server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", tb, "--host", "127.0.0.1",
                           "--port", str(port), "--reload_interval", "1"],
                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
try:
    runs, deadline = [], time.time() + 120
    while time.time() < deadline:
        check(server.poll() is None, f"tensorboard exited ({server.returncode}); see {log.name}")
        try:
            runs = get(port, "/data/runs")
            if {"base", "ddp2"} <= set(runs):
                break
        except OSError:
            pass
        time.sleep(1)
    check({"base", "ddp2"} <= set(runs), f"runs {runs} within 120 s")

    tags = {}
    while time.time() < deadline:
        tags = get(port, "/data/plugin/scalars/tags")
        if "metrics/throughput" in tags.get("ddp2", {}):
            break
        time.sleep(1)
    check({"metrics/throughput", "metrics/speedup", "repeats/samples_per_s"} <= set(tags.get("ddp2", {})),
          f"ddp2's scalar tags {tags.get('ddp2')}")
    scalars = get(port, "/data/plugin/scalars/scalars?" + urllib.parse.urlencode({"run": "ddp2", "tag": "repeats/samples_per_s"}))
    check([s[1] for s in scalars] == [1, 2], f"ddp2's repeats as steps: {scalars}")

    exp = get(port, "/data/plugin/hparams/experiment", {"experimentName": ""})
    hp_names = [h["name"] for h in exp["hparamInfos"]]
    metric_tags = [m["name"]["tag"] for m in exp["metricInfos"]]
    check({"strategy", "devices", "nodes", "precision", "model", "seq_length", "global_batch"} <= set(hp_names),
          f"hparams {hp_names}")
    check({"metrics/throughput", "metrics/speedup", "metrics/efficiency", "metrics/memory_gib_per_device"}
          <= set(metric_tags), f"metrics {metric_tags}")

    groups = get(port, "/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN", "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [{"hparam": "strategy", "order": "ORDER_ASC"}], "startIndex": 0, "sliceSize": 100})
    by_name = {g["name"]: g for g in groups.get("sessionGroups", [])}
    check(set(by_name) == {"base", "ddp2"}, f"session groups {list(by_name)}")
    check(by_name["base"]["hparams"]["strategy"] == "baseline" and by_name["ddp2"]["hparams"]["strategy"] == "ddp",
          f"strategies {[(n, g['hparams']) for n, g in by_name.items()]}")
    check(by_name["ddp2"]["hparams"]["devices"] == 2, f"ddp2's devices {by_name['ddp2']['hparams']}")
    for name, g in by_name.items():
        values = {m["name"]["tag"]: m["value"] for m in g["metricValues"]}
        check(values.get("metrics/throughput", 0) > 0 and "metrics/speedup" in values,
              f"{name}: metric values {values}")
    print("OK:", {n: {m['name']['tag']: m['value'] for m in g['metricValues']} for n, g in by_name.items()})
finally:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
    server.wait(timeout=30)
