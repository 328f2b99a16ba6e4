"""How long a prepared GPU call takes, estimated before it runs: the device time is
15 minutes a session and 10 a command, and a call that overruns loses the phases at
its end, so each phase's cost is written beside it from what the H100 measured.

  tools/gpu/validate.sh --plan PHASE...        lists the commands (writes no results)
  estimate.py PLAN --reference DIR... [--limit-s S] [--json OUT]

PLAN is validate.sh's listing: "phase NAME", "budget PHASE SECONDS WHAT" (a
within_budget check) and "run ARGV" (each command as the shell would run it).
Each command is costed from the recorded runs under the reference folders (run
folders, and the *-runs.tar.gz archives validate.sh wrote):

- an hpcbench run: its steps x the median step of the recorded run of the same
  configuration (sequence, batch, strategy, graph, fused, ranks), plus the fixed
  cost of one run (start-to-start gap less the steps, over consecutive recorded
  runs: process start, model and data set-up, warm-up, capture, teardown);
  evaluation adds a recorded evaluation's seconds;
- a reference process (reference_train.py): its start (measured the same way
  between the hpcbench runs around it), each trainer's steps, and for a compile
  mode the compile seconds its recorded JSON states;
- what no recorded run covers is named in the output with the figure assumed.

A configuration never recorded falls back, in order, to the same one eager (a
graph only removes launches), unfused, then the baseline's: the estimate errs
long. A budget check that the phase's estimated time has passed skips the
commands up to the next check, as validate.sh does. Exit 1 when the total
exceeds --limit-s."""
import argparse
import datetime
import glob
import json
import os
import shlex
import statistics
import sys
import tarfile

# What nothing recorded measures, each stated in the output when used.
ASSUMED = {
    "extra_trainer_s": (5.0, "a second trainer in one reference process: its model built and warmed"),
    "profile_s": (10.0, "--profile: the trace of three steps written and the kernel table built"),
    "bench_kernels_s": (15.0, "bench_kernels --check-only"),
    "fp8_s": (30.0, "bench_kernels --fp8 (12 GEMMs, never run on a GPU)"),
    "bench_comm_s": (30.0, "bench-comm and the copy bandwidth (the second table's strategies phase, its tail)"),
    "script_s": (2.0, "a Python check or report script"),
    "call_start_s": (23.0, "the call's start before its first run: the second table's call 2 logged 03:33:11, its "
                           "first run started 03:33:34 (the binary's first load of LibTorch and CUDA)"),
}


def parse_time(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def recorded_runs(folders):
    """Every recorded run.json's result (started_at, steps, step median, configuration),
    from run folders and from the phase archives."""
    runs = []
    for top in folders:
        for path in glob.glob(os.path.join(top, "**", "run.json"), recursive=True):
            with open(path) as f:
                runs.append(json.load(f)["result"])
        for path in glob.glob(os.path.join(top, "**", "*-runs.tar.gz"), recursive=True):
            with tarfile.open(path) as t:
                for m in t.getmembers():
                    if m.name.endswith("/run.json"):
                        runs.append(json.load(t.extractfile(m))["result"])
    return [r for r in runs if r.get("started_at") and r.get("step_ms_median", 0) > 0]


def recorded_refs(folders):
    refs = []
    for top in folders:
        for path in glob.glob(os.path.join(top, "**", "*-runs.tar.gz"), recursive=True):
            with tarfile.open(path) as t:
                for m in t.getmembers():
                    if "/ref/" in m.name and m.name.endswith(".json"):
                        refs.append(json.load(t.extractfile(m)))
    return [r for r in refs if "step_ms_median" in r]


def strategy_of(strategy, options):
    opts = dict(kv.split("=", 1) for kv in options.split(",") if "=" in kv)
    if strategy == "zero":
        return f"zero{opts.get('stage', '1')}"
    if strategy == "fsdp":
        return f"fsdp-{opts.get('sharding', 'full')}"
    return strategy


def key_of_run(r):
    return (int(r["seq_length"]), int(r["batch_per_device"]), strategy_of(r["strategy"], r.get("strategy_options", "")),
            str(r.get("cuda_graph", "off")) != "off", bool(int(r.get("fused", 0))), int(r["world_size"]))


class Model:
    """The cost model, fitted to the recorded runs."""

    def __init__(self, folders):
        self.runs = recorded_runs(folders)
        self.refs = recorded_refs(folders)
        if not self.runs:
            sys.exit(f"estimate.py: no recorded run.json under {', '.join(folders)}")
        self.step = {}
        for r in self.runs:
            self.step.setdefault(key_of_run(r), []).append(float(r["step_ms_median"]))
        fixed, ref_gaps = [], []
        by_session = sorted(self.runs, key=lambda r: parse_time(r["started_at"]))
        for a, b in zip(by_session, by_session[1:]):
            gap = (parse_time(b["started_at"]) - parse_time(a["started_at"])).total_seconds()
            own = a["steps"] * a["step_ms_median"] / 1000
            if 0 < gap <= 15 and int(a["world_size"]) == 1 and float(a.get("eval_forward_s", -1)) < 0:
                fixed.append(gap - own)
            elif a["run_id"] == "strat-baseline" and b["run_id"] == "strat-ddp" and gap < 120:
                ref_gaps.append(gap)
        # The second table's strategies phase ran the baseline, then HF eager and FSDP2 (two
        # reference processes of 40 steps), then ddp: what the two processes took over their steps.
        self.hb_fixed = statistics.median(fixed)
        ref_steps = 40 * (40.3 + 97.0) / 1000
        self.ref_process = statistics.median((g - self.hb_fixed - ref_steps) / 2 for g in ref_gaps) if ref_gaps else 20.0
        self.ref_step = {}
        self.compile_s = {}
        for r in self.refs:
            self.ref_step.setdefault((r["impl"], int(r["batch"])), []).append(float(r["step_ms_median"]))
            if r.get("compile_s"):
                self.compile_s.setdefault(r["impl"], []).append(float(r["compile_s"]))
        evals = [r for r in self.runs if float(r.get("eval_forward_s", -1)) >= 0 and int(r["world_size"]) == 1]
        self.eval_s = max((float(r["eval_load_s"]) + float(r["eval_forward_s"]) + float(r["eval_postprocess_s"]) +
                           float(r.get("eval_metric_s", 0))) for r in evals) if evals else 5.0
        self.used = {}

    def assume(self, name):
        value, why = ASSUMED[name]
        self.used[name] = f"{value:g} s: {why}"
        return value

    def step_ms(self, key):
        seq, batch, strategy, graph, fused, world = key
        for k, why in ((key, None), ((seq, batch, strategy, False, fused, world), "eager's step (not recorded graphed)"),
                       ((seq, batch, strategy, False, False, world), "unfused eager's step"),
                       ((seq, batch, "baseline", False, False, world), "the baseline's step")):
            if k in self.step:
                if why:
                    self.used[f"step {key}"] = why
                return statistics.median(self.step[k])
        near = [k for k in self.step if k[2] == "baseline" and k[5] == 1 and k[0] == seq]
        if not near:
            near = [k for k in self.step if k[2] == "baseline" and k[5] == 1]
        # The nearest recorded batch, scaled by tokens (a GPU-bound step grows with them).
        k = min(near, key=lambda k: abs(k[1] * k[0] - batch * seq))
        self.used[f"step {key}"] = f"scaled from {k}"
        return statistics.median(self.step[k]) * max(1.0, batch * seq / (k[1] * k[0]))

    def hpcbench(self, argv):
        opt = options(argv)
        seq = int(opt.get("--max-seq-length", 384))
        strategy = opt.get("--strategy", "baseline")
        if strategy == "zero":
            strategy = f"zero{opt.get('--zero-stage', '1')}"
        elif strategy == "fsdp":
            strategy = f"fsdp-{opt.get('--sharding', 'full')}"
        world = int(opt.get("--nproc-per-node", 1))
        key = (seq, int(opt.get("--batch-size", 32)), strategy, "--cuda-graph" in argv, "--fused" in argv, world)
        s = self.hb_fixed + int(opt.get("--max-steps", 40)) * self.step_ms(key) / 1000
        if "--eval-data" in opt:
            s += self.eval_s
        if "--profile" in opt:
            s += self.assume("profile_s")
        return s

    def reference(self, argv):
        opt = options(argv)
        trainers = opt.get("--trainer", "eager").split(",")
        batch, steps = int(opt.get("--batch", 32)), int(opt.get("--steps", 40))
        s = self.ref_process
        if len(trainers) > 1:
            s += (len(trainers) - 1) * self.assume("extra_trainer_s")
        for t in trainers:
            impl = {"eager": "hf-eager", "fsdp2": "fsdp2", "lightning": "lightning"}.get(t, f"hf-{t}")
            ms = self.ref_step.get((impl, batch)) or self.ref_step.get(("hf-eager", batch))
            if ms is None:
                ms = [self.step_ms((384, batch, "baseline", False, False, 1)) * 1.3]
                self.used[f"reference {impl} b{batch}"] = "hpcbench's eager step x 1.3 (no reference recorded)"
            if impl == "fsdp2" and (impl, batch) not in self.ref_step:
                # The second table's FSDP2 at batch 32: 97 ms a step against eager's 46.
                ms = [m * 97.0 / 46.0 for m in ms]
            s += steps * statistics.median(ms) / 1000
            if t.startswith("compile-"):
                c = self.compile_s.get(impl) or self.compile_s.get("hf-compile-reduce-overhead") or [60.0]
                s += max(c)
        return s

    def command(self, argv):
        exe = os.path.basename(argv[0]) if argv else ""
        if exe == "hpcbench" and len(argv) > 1 and argv[1] == "run":
            return "hpcbench run", self.hpcbench(argv)
        if any(a.endswith("reference_train.py") for a in argv):
            return "reference", self.reference(argv)
        if exe == "bench_kernels":
            return "kernels", self.assume("fp8_s" if "--fp8" in argv else "bench_kernels_s")
        if exe == "hpcbench" and len(argv) > 1 and argv[1] == "bench-comm":
            return "bench-comm", self.assume("bench_comm_s")
        return "script", self.assume("script_s")


def options(argv):
    opt = {}
    for i, a in enumerate(argv):
        if a.startswith("--"):
            opt[a] = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else ""
    return opt


def estimate(plan_lines, model):
    """Per phase: commands run, seconds, what a budget left out."""
    phases, cur, skipping = [], None, False
    for line in plan_lines:
        line = line.rstrip("\n")
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        if kind == "phase":
            # The call's start falls in its first phase's time, and so under that phase's budget.
            cur = {"phase": rest, "seconds": 0.0 if phases else model.assume("call_start_s"), "commands": 0,
                   "hpcbench_runs": 0, "skipped": []}
            phases.append(cur)
            skipping = False
        elif kind == "budget":
            _, budget, what = rest.split(" ", 2)
            skipping = 0 < float(budget) <= cur["seconds"]
            if skipping:
                cur["skipped"].append(what)
        elif kind == "run" and not skipping:
            argv = shlex.split(rest)
            what, s = model.command(argv)
            cur["seconds"] += s
            cur["commands"] += 1
            cur["hpcbench_runs"] += what == "hpcbench run"
            opt = options(argv)
            label = opt.get("--run-name") or opt.get("--json-out") or os.path.basename(argv[0]) if argv else ""
            cur.setdefault("each", []).append([what, os.path.basename(label), round(s, 1)])
    for p in phases:
        # Each phase's results written as it finishes: its report and the archive.
        p["seconds"] += model.assume("script_s")
    return phases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--reference", action="append", required=True, help="a recorded results folder (repeatable)")
    ap.add_argument("--limit-s", type=float, default=0, help="exit 1 when the estimate exceeds it")
    ap.add_argument("--json", help="the estimate as JSON")
    ap.add_argument("--commands", action="store_true", help="each command's estimate too")
    a = ap.parse_args()
    for d in a.reference:
        if not os.path.isdir(d):
            sys.exit(f"estimate.py: --reference {d}: not a folder")
    try:
        with open(a.plan) as f:
            lines = f.readlines()
    except OSError as e:
        sys.exit(f"estimate.py: {a.plan}: {e.strerror}")
    model = Model(a.reference)
    phases = estimate(lines, model)
    total = sum(p["seconds"] for p in phases)
    print(f"{'phase':<18} {'runs':>5} {'cmds':>5} {'seconds':>8} {'by then':>8}")
    t = 0.0
    for p in phases:
        t += p["seconds"]
        skipped = f"  (budget leaves out: {'; '.join(p['skipped'])})" if p["skipped"] else ""
        print(f"{p['phase']:<18} {p['hpcbench_runs']:>5} {p['commands']:>5} {p['seconds']:>8.0f} {t:>8.0f}{skipped}")
        for what, label, s in p.get("each", []) if a.commands else []:
            print(f"    {what:<12} {label:<40} {s:>6.1f}")
    print(f"total: {total:.0f} s ({total / 60:.1f} min)" + (f", limit {a.limit_s:.0f} s" if a.limit_s else ""))
    print(f"from {len(model.runs)} recorded runs and {len(model.refs)} references: one hpcbench run's fixed cost "
          f"{model.hb_fixed:.1f} s, one reference process's {model.ref_process:.1f} s; assumed:")
    for k, v in sorted(model.used.items()):
        print(f"  {k}: {v}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"phases": phases, "total_s": total, "limit_s": a.limit_s, "hb_fixed_s": model.hb_fixed,
                       "ref_process_s": model.ref_process, "assumed": model.used}, f, indent=1)
    if a.limit_s and total > a.limit_s:
        print(f"estimate.py: the call's estimate, {total:.0f} s, exceeds its limit of {a.limit_s:.0f} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
