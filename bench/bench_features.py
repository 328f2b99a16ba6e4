"""Tokenization + run_qa.py-style feature building: Hugging Face's fast Rust
tokenizer (one thread) with the labelling in Python, as run_qa.py does it
(tests/reference/squad_features.py, our implementation of its algorithm),
against `hpcbench data`, in the same run.

    V=/root/.cache/hpcbench/venv-9d1d7d1a288d
    $V/bin/python bench/bench_features.py --hpcbench build/hpcbench \
        --data tests/fixtures [--big 130000] [--repeat 3]

Datasets: the two shared SQuAD samples, and a file of --big questions made by
repeating them (the size of SQuAD v2.0 train). Timed: the tokenizer call and
the label loop (Python), build_features (C++); JSON
parsing is excluded on both sides and the feature cache is not used.
hpcbench runs with --threads 1 (same work, one core) and with all threads.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hpcbench", required=True)
    ap.add_argument("--data", default=os.path.join(HERE, "..", "tests", "fixtures"))
    ap.add_argument("--big", type=int, default=130000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-seq-length", type=int, default=384)
    ap.add_argument("--doc-stride", type=int, default=128)
    args = ap.parse_args()
    os.environ["HPCBENCH_TEST_DATA"] = args.data
    os.environ.setdefault("HPCBENCH_REF_DIR", tempfile.gettempdir())
    import squad_features as ref  # the test reference: HF tokenizer + run_qa's labelling

    vocab = os.path.join(args.data, "bert-base-uncased", "vocab.txt")
    tok = ref.make_tokenizer()
    tmp = tempfile.mkdtemp(prefix="hpcbench-bench-")
    files = {name: os.path.join(args.data, rel) for name, rel in ref.SAMPLES.items()}

    # The big file: whole articles of both samples, repeated, with fresh ids.
    with open(files["v20"], encoding="utf-8") as f:
        v2 = json.load(f)
    with open(files["v11"], encoding="utf-8") as f:
        v1 = json.load(f)
    articles, count, rep = [], 0, 0
    while count < args.big:
        for art in v1["data"] + v2["data"]:
            a = json.loads(json.dumps(art))
            for p in a["paragraphs"]:
                for q in p["qas"]:
                    q["id"] = f"{q['id']}-{rep}"
                    q.setdefault("is_impossible", False)
                count += len(p["qas"])
            articles.append(a)
        rep += 1
    big = os.path.join(tmp, "squad-big.json")
    with open(big, "w", encoding="utf-8") as f:
        json.dump({"version": "v2.0", "data": articles}, f)
    files[f"big{count}"] = big

    print(f"{'dataset':<14}{'questions':>10}{'features':>10}{'HF (s)':>10}{'hpcbench 1t (s)':>17}"
          f"{'ratio':>8}{'hpcbench all (s)':>18}")
    for name, path in files.items():
        cols = ref.flatten(path)
        best = float("inf")
        for _ in range(args.repeat if count < 200000 else 1):
            t0 = time.perf_counter()
            feats = ref.build_features({k: list(v) for k, v in cols.items()}, tok,
                                       args.max_seq_length, args.doc_stride)
            best = min(best, time.perf_counter() - t0)
        n_ref = len(feats["input_ids"])
        res = {}
        for threads in (1, 0):
            out = os.path.join(tmp, f"{name}-{threads}.json")
            subprocess.run([args.hpcbench, "data", "--squad", path, "--vocab", vocab, "--no-cache",
                            "--repeat", str(args.repeat), "--threads", str(threads),
                            "--max-seq-length", str(args.max_seq_length), "--doc-stride", str(args.doc_stride),
                            "--out", out], check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                res[threads] = json.load(f)
        assert res[1]["features"] == n_ref, (res[1]["features"], n_ref)
        t1, tall = res[1]["build_seconds"], res[0]["build_seconds"]
        print(f"{name:<14}{len(cols['id']):>10}{n_ref:>10}{best:>10.3f}{t1:>17.3f}{best / t1:>7.1f}x{tall:>18.3f}")


if __name__ == "__main__":
    main()
