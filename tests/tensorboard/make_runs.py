"""The runs the TensorBoard tests read: a baseline with evaluation and device
sampling, ddp over 2 ranks twice (--repeats 2, the same global batch), and
`report --tensorboard` over them. Usage: make_runs.py WORK"""
import os
import shutil
import sys

from tbread import BIN, DATA, RUN_ARGS, sh

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
results = os.path.join(work, "results")
os.makedirs(results)
common = RUN_ARGS + ["--results-dir", results, "--max-steps", "6", "--sample-ms", "10"]
sh([BIN] + common + ["--batch-size", "4", "--run-name", "base", "--doc-stride", "16", "--max-query-length", "24",
                     "--eval-data", os.path.join(DATA, "squad", "dev-v1.1-sample.json"),
                     "--vocab", os.path.join(DATA, "bert-base-uncased", "vocab.txt"), "--cache-dir", "none"])
sh([BIN] + common + ["--batch-size", "2", "--strategy", "ddp", "--nproc-per-node", "2", "--repeats", "2",
                     "--run-name", "ddp2"])
csv = sh([BIN, "report", results, "--format", "csv", "--tensorboard", os.path.join(work, "tb")], merge=False)
with open(os.path.join(work, "report.csv"), "w") as f:
    f.write(csv)
print(csv)
