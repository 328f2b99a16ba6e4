#!/usr/bin/env python3
"""The scaling model against published figures (results/reference/, each row
with its source):

1. NVIDIA DeepLearningExamples BERT-large SQuAD v1.1 fine-tuning on DGX A100
   80GB, batch 32 per GPU: the 8-GPU throughput predicted from the 1-GPU one
   with configs/systems/dgx-a100.toml (AMP: apex O2, fp16 gradients in apex's
   DDP; TF32: fp32 gradients).
2. The same README's pre-training multi-node scaling (AMP, seq 128, global
   batch 65536 kept: accumulation 32/nodes, one DDP bucket all-reduced in fp16
   after the accumulation, as run_pretraining.py does): the strong scaling
   over one node predicted from the 1-GPU figure.
3. The student report's 2x A100-PCIe table and the Accelerate V100 speedups
   (shared/docs/reference-figures.md): what the model reproduces, what it
   shows to be impossible or not comparable.

  python bench/bench_predict_published.py --bin build/hpcbench

No run happens: every input is a published figure or a system file, so the
numbers are deterministic. The goal is within 10 % of each NVIDIA figure.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

REF = "results/reference"


def predict(a, tmp, *args):
    out = os.path.join(tmp, "p.csv")
    cmd = [a.bin, "predict", "--csv", out] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    with open(out) as f:
        return list(csv.DictReader(f))


def published(file, run_id):
    with open(os.path.join(REF, file)) as f:
        for r in csv.DictReader(f):
            if r["run_id"] == run_id:
                return r
    sys.exit(f"{file}: no row {run_id}")


HOLDOUT = "nvidia_dle_bert_large_pretrain_holdout_dgxa100.csv"
# Each series: its one-GPU row (the calibration), the rows predicted from it,
# the global batch they keep and the reduction dtype (AMP: fp16, as section 2).
HOLDOUT_SERIES = (
    ("TF32, seq 128", "dgxa100-pretrain-tf32-s128", 65536, []),
    ("AMP, seq 512", "dgxa100-pretrain-fp16-s512", 32768, ["--reduce-dtype", "fp16"]),
    ("TF32, seq 512", "dgxa100-pretrain-tf32-s512", 32768, []),
)


def holdout(a, tmp, dgx):
    """Rows of the same README that built nothing here (the model's calibration is sections 1 and 2:
    SQuAD at 8 GPUs, AMP seq 128 pre-training): each series predicted from its own one-GPU row.
    Returns the largest error's magnitude of the rows --check-max-nodes bounds; with --check BOUND, exits 1
    when it is above BOUND. The rows beyond are printed, not bounded: TF32 at seq 512 on 16 and 32 nodes
    scales far worse than the model says (bench/README.md, "Hold-out")."""
    print("## 4. Hold-out: the same README's TF32 and seq-512 pre-training tables, not used to build the model")
    print("     (each predicted from its own 1-GPU row; ddp, one bucket after the accumulation)")
    print(f"{'series':<14} {'nodes':>5} {'GPUs':>5} {'accum':>5} {'seq/s pub':>10} {'seq/s pred':>11} {'error':>7}")
    worst = 0.0
    errors, beyond = [], []
    for name, prefix, global_batch, extra in HOLDOUT_SERIES:
        path = os.path.join(REF, HOLDOUT)
        rows = [r for r in csv.DictReader(open(path)) if r["run_id"].startswith(prefix + "-")]
        targets = [r for r in rows if r["run_id"].endswith("node")]
        nodes = ",".join(r["nodes"] for r in targets)
        preds = predict(a, tmp, "--baseline", path, "--baseline-row", prefix + "-1gpu", "--system", dgx,
                        "--strategies", "ddp:bucket_mb=1000000", "--nodes", nodes, "--gpus-per-node", "8",
                        "--global-batch", str(global_batch), *extra)
        by_nodes = {int(p["nodes"]): p for p in preds}
        for r in targets:
            p = by_nodes[int(r["nodes"])]
            pub, pred = float(r["samples_per_s"]), float(p["samples_per_s"])
            err = pred / pub - 1
            errors.append(err)
            if int(r["nodes"]) <= a.check_max_nodes:
                worst = max(worst, abs(err))
            else:
                beyond.append(f"{name} at {r['nodes']} nodes {err:+.1%}")
            print(f"{name:<14} {r['nodes']:>5} {r['world_size']:>5} {p['grad_accum']:>5} {pub:>10.0f} {pred:>11.0f} "
                  f"{err:>+7.1%}")
    errors.sort()
    print(f"hold-out: {len(errors)} rows, error from {errors[0]:+.1%} to {errors[-1]:+.1%}, "
          f"median {errors[len(errors) // 2]:+.1%}; up to {a.check_max_nodes} nodes the largest magnitude {worst:.1%}")
    if beyond:
        print(f"hold-out: beyond {a.check_max_nodes} nodes, not bounded: " + ", ".join(beyond))
    if a.check is not None:
        if worst > a.check:
            sys.exit(f"hold-out: the largest error up to {a.check_max_nodes} nodes, {worst:.1%}, is above the stated "
                     f"bound {a.check:.0%}")
        print(f"hold-out: every row up to {a.check_max_nodes} nodes within the stated bound of {a.check:.0%}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/hpcbench")
    ap.add_argument("--check", type=float, default=None, metavar="BOUND",
                    help="exit 1 when a hold-out row's error is above BOUND (a fraction: 0.1 is 10 %%)")
    ap.add_argument("--check-max-nodes", type=int, default=8, metavar="N",
                    help="the hold-out rows --check bounds: those of at most N nodes (default 8)")
    ap.add_argument("--holdout-only", action="store_true", help="section 4 alone (the test runs it)")
    a = ap.parse_args()
    dgx = "configs/systems/dgx-a100.toml"
    if a.holdout_only:
        with tempfile.TemporaryDirectory() as tmp:
            holdout(a, tmp, dgx)
        return
    with tempfile.TemporaryDirectory() as tmp:
        print("## 1. NVIDIA DLE BERT-large SQuAD v1.1 fine-tuning, DGX A100 80GB, batch 32/GPU, seq 384: 1 -> 8 GPUs")
        print(f"{'precision':<9} {'1 GPU':>7} {'8 GPU pub':>10} {'8 GPU pred':>11} {'error':>7} {'scaling pub':>12} "
              f"{'pred':>6} {'exposed ms':>11}")
        f1 = "nvidia_dle_bert_large_squad11_a100.csv"
        for prec, extra in (("fp16", ["--reduce-dtype", "fp16"]), ("tf32", [])):
            one = published(f1, f"dgxa100-{prec}-1")
            eight = published(f1, f"dgxa100-{prec}-8")
            p = predict(a, tmp, "--baseline", os.path.join(REF, f1), "--baseline-row", f"dgxa100-{prec}-1",
                        "--system", dgx, "--strategies", "ddp", "--nodes", "1", "--gpus-per-node", "8", *extra)[0]
            pub, pred = float(eight["samples_per_s"]), float(p["samples_per_s"])
            print(f"{prec:<9} {float(one['samples_per_s']):>7.1f} {pub:>10.1f} {pred:>11.1f} {pred / pub - 1:>+7.1%} "
                  f"{pub / float(one['samples_per_s']):>12.2f} {float(p['speedup']):>6.2f} "
                  f"{float(p['comm_exposed_ms']):>11.2f}")

        print()
        print("## 2. NVIDIA DLE BERT-large pre-training, DGX A100 80GB nodes, AMP, seq 128, global batch 65536")
        f2 = "nvidia_dle_bert_large_pretrain_dgxa100.csv"
        rows = predict(a, tmp, "--baseline", os.path.join(REF, f2), "--baseline-row", "dgxa100-pretrain-fp16-s128-1gpu",
                       "--system", dgx, "--strategies", "ddp:bucket_mb=1000000", "--nodes", "1,2,4,8,16,32",
                       "--gpus-per-node", "8", "--global-batch", "65536", "--reduce-dtype", "fp16")
        by_nodes = {int(r["nodes"]): r for r in rows}
        t1 = float(by_nodes[1]["samples_per_s"])
        pub1 = float(published(f2, "dgxa100-pretrain-fp16-s128-1node")["samples_per_s"])
        print(f"{'nodes':>5} {'accum':>5} {'seq/s pub':>10} {'seq/s pred':>11} {'error':>7} {'scaling pub':>12} "
              f"{'pred':>7} {'error':>7} {'exposed ms':>11}")
        for n, r in sorted(by_nodes.items()):
            pub = float(published(f2, f"dgxa100-pretrain-fp16-s128-{n}node")["samples_per_s"])
            pred = float(r["samples_per_s"])
            sp, ss = pub / pub1, pred / t1
            print(f"{n:>5} {r['grad_accum']:>5} {pub:>10.0f} {pred:>11.0f} {pred / pub - 1:>+7.1%} {sp:>12.2f} "
                  f"{ss:>7.2f} {ss / sp - 1:>+7.1%} {float(r['comm_exposed_ms']):>11.2f}")

        print()
        print("## 3a. Student report, bert-base SQuAD 2.0, 2x A100-PCIE-40GB (configs/systems/a100-pcie-2x.toml)")
        f3 = "lightning_2xa100_bert_base_squad2.csv"
        times = {r["strategy"]: float(r["train_time_s"]) for r in csv.DictReader(open(os.path.join(REF, f3)))
                 if r["data"].endswith("2-epochs")}
        # Two epochs of SQuAD 2.0 at seq 384 / stride 128 (Hugging Face's run_qa defaults): about 131.8k
        # training windows, so 263.6k sequences; the report does not say, this is an assumption.
        seqs = 2 * 131_800
        base_step = 8 * times["baseline"] / seqs
        print(f"published times (s): " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()))
        print(f"time ratio baseline / x (a speedup at 2 GPUs can be at most 2): " +
              ", ".join(f"{k} {times['baseline'] / v:.2f}" for k, v in times.items() if k != "baseline"))
        for label, step in (("calibrated on the 1-GPU baseline", base_step),
                            ("calibrated on the ddp run as if it scaled perfectly", 2 * 8 * times["ddp"] / seqs)):
            row = os.path.join(tmp, "student.csv")
            with open(row, "w") as f:
                f.write("run_id,strategy,world_size,device,device_name,model,precision,seq_length,batch_per_device,"
                        f"global_batch,samples_per_s,status\ns1,baseline,1,cuda,NVIDIA A100-PCIE-40GB,"
                        f"bert-base-uncased,fp32,384,8,8,{8 / step},ok\n")
            ps = {r["strategy"]: r for r in predict(a, tmp, "--baseline", row, "--system",
                                                    "configs/systems/a100-pcie-2x.toml", "--strategies",
                                                    "dp,ddp,fsdp,zero", "--gpus-per-node", "2")}
            print(f"  {label}: step {step * 1000:.1f} ms at batch 8; predicted speedup at 2 GPUs: " +
                  ", ".join(f"{k} {float(v['speedup']):.2f}" for k, v in ps.items()))
            d = float(ps["ddp"]["step_ms"])
            print(f"    predicted time / ddp's: fsdp {float(ps['fsdp']['step_ms']) / d:.3f} "
                  f"(published {times['fsdp'] / times['ddp']:.3f}), deepspeed as zero-2 "
                  f"{float(ps['zero']['step_ms']) / d:.3f} (published {times['deepspeed'] / times['ddp']:.3f})")

        print()
        print("## 3b. Accelerate, DistilBERT on emotion, V100-16GB nodes of 4, fp16, batch 256/GPU, 5 epochs")
        f4 = "accelerate_v100_distilbert_emotion.csv"
        acc = [r for r in csv.DictReader(open(os.path.join(REF, f4))) if r["batch_per_device"] == "256"]
        t = {int(r["world_size"]): float(r["train_time_s"]) for r in acc}
        # Least squares t(N) = c + w / N: a part that does not shrink with the GPUs (c) and one that does.
        xs = [1 / n for n in t]
        ys = list(t.values())
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        w = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        c = my - w * mx
        print(f"fit t(N) = {c:.2f} s + {w:.2f} s / N")
        print(f"{'GPUs':>4} {'time':>6} {'speedup pub':>12} {'fit':>6} {'at most N':>9}")
        for n in sorted(t):
            print(f"{n:>4} {t[n]:>6.2f} {t[1] / t[n]:>12.3f} {t[1] / (c + w / n):>6.2f} {n:>9}")
        print()
        holdout(a, tmp, dgx)
    print()
    print("# see bench/README.md for what each figure shows")


if __name__ == "__main__":
    main()
