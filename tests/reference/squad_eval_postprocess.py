"""Reference SQuAD post-processing: answers from start/end logits the way
transformers' question-answering example (utils_qa.py's
postprocess_qa_predictions) picks them, on random logits over real features.

postprocess() below is our own implementation of the algorithm that
postprocess_qa_predictions follows, not its code: n-best start and end
positions per window, spans outside the context or too long skipped, the
[CLS] null score, the "empty" fallback, softmax probabilities over the
n-best list and, for version_2_with_negative, the null_score_diff_threshold
decision.

Features: squad_features.py's build_features (Hugging Face fast BERT
tokenizer), max_seq_length 128 and doc_stride 32, on 30 questions of the
shared dev-v2.0 sample (paragraphs with long contexts and non-ASCII text),
so that most examples have several windows.

Writes $HPCBENCH_REF_DIR/squad_eval_postprocess.json: the examples (id,
context), the features (seq_len, example_index, offsets with None -> -1),
float32 start/end logits, and for several configurations (v1/v2, n_best_size,
max_answer_length, null_score_diff_threshold) the predictions, the n-best
lists and the null odds.
"""
import collections
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from squad_features import build_features, flatten, make_tokenizer  # noqa: E402

SHARED = os.environ["HPCBENCH_TEST_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]


def top_positions(logits, k):
    """The k positions with the highest logits, highest first."""
    return np.argsort(logits)[::-1][:k].tolist()


def postprocess(contexts, example_index, offsets, start_logits, end_logits, version_2_with_negative=False,
                n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0):
    """Answers for every example from the float32 logits of its windows.

    contexts[e] is example e's context; window w belongs to example
    example_index[w] and offsets[w][k] is the (begin, end) character span of
    its token k in the context, or None when k is not a context token.

    Per example: every window proposes the spans that pair one of its
    n_best_size best start positions with one of its n_best_size best end
    positions, both on context tokens, end not before start, at most
    max_answer_length tokens, scored start + end logit. The null answer
    scores start + end logit at [CLS], from the window where that sum is
    lowest. The n_best_size best proposals (the null one among them in v2,
    and added at the end if it is not) make the n-best list; when it holds
    no non-empty answer, a zero-scored "empty" answer goes first. The
    probabilities are a softmax over the n-best scores. v1 answers the first
    of the list; v2 answers "" when the null score minus the best non-empty
    answer's start + end logits exceeds null_score_diff_threshold, and
    records that difference as the question's null odds.

    Returns (predictions, n-best lists, null odds), keyed by question in
    example order; the null odds are empty in v1.
    """
    windows = collections.defaultdict(list)
    for w, e in enumerate(example_index):
        windows[e].append(w)
    predictions, nbest_lists, null_odds = {}, {}, {}
    for e, (qid, context) in enumerate(contexts):
        spans, null = [], None
        for w in windows[e]:
            s_logits, e_logits = start_logits[w], end_logits[w]
            null_here = s_logits[0] + e_logits[0]
            if null is None or null_here < null["score"]:
                null = {"text": "", "score": null_here, "start_logit": s_logits[0], "end_logit": e_logits[0],
                        "null": True}
            for s in top_positions(s_logits, n_best_size):
                for t in top_positions(e_logits, n_best_size):
                    if offsets[w][s] is None or offsets[w][t] is None:
                        continue
                    if not 0 <= t - s < max_answer_length:
                        continue
                    spans.append({"text": context[offsets[w][s][0]:offsets[w][t][1]],
                                  "score": s_logits[s] + e_logits[t],
                                  "start_logit": s_logits[s], "end_logit": e_logits[t], "null": False})
        if version_2_with_negative:
            spans.append(null)
        best = sorted(spans, key=lambda c: c["score"], reverse=True)[:n_best_size]
        if version_2_with_negative and not any(c["null"] for c in best):
            best.append(null)
        if not any(c["text"] for c in best):
            best.insert(0, {"text": "empty", "score": 0.0, "start_logit": 0.0, "end_logit": 0.0, "null": False})
        scores = np.array([c["score"] for c in best])
        weights = np.exp(scores - scores.max())
        probabilities = weights / weights.sum()
        nbest_lists[qid] = [{"text": c["text"], "probability": float(p), "start_logit": float(c["start_logit"]),
                             "end_logit": float(c["end_logit"])} for c, p in zip(best, probabilities)]
        if not version_2_with_negative:
            predictions[qid] = best[0]["text"]
            continue
        answer = next(c for c in best if c["text"] != "")
        diff = null["score"] - answer["start_logit"] - answer["end_logit"]
        null_odds[qid] = float(diff)
        predictions[qid] = "" if diff > null_score_diff_threshold else answer["text"]
    return predictions, nbest_lists, null_odds


# (paragraph index in the flattened sample's paragraph order, questions taken)
PARAGRAPHS = [1, 2, 4, 9, 11, 13, 29, 37, 40, 45]
CONFIGS = [
    {"version_2_with_negative": False, "n_best_size": 20, "max_answer_length": 30, "null_score_diff_threshold": 0.0},
    {"version_2_with_negative": True, "n_best_size": 20, "max_answer_length": 30, "null_score_diff_threshold": 0.0},
    {"version_2_with_negative": True, "n_best_size": 5, "max_answer_length": 3, "null_score_diff_threshold": 1.5},
    {"version_2_with_negative": False, "n_best_size": 3, "max_answer_length": 30, "null_score_diff_threshold": 0.0},
    {"version_2_with_negative": True, "n_best_size": 3, "max_answer_length": 30, "null_score_diff_threshold": -2.0},
]


def pick_questions(cols):
    contexts = list(dict.fromkeys(cols["context"]))  # paragraphs in order
    wanted = [contexts[i] for i in PARAGRAPHS]
    taken = collections.Counter()
    rows = []
    for i, ctx in enumerate(cols["context"]):
        if ctx in wanted and taken[ctx] < 3:
            taken[ctx] += 1
            rows.append({k: cols[k][i] for k in cols})
    return rows


def make_logits(rng, feats, seq_len, n_examples):
    """Random float32 logits with a realistic shape: a peaked span in the
    context for most windows, a strong [CLS] for some, and one example whose
    top logits all point at question tokens (utils_qa's "empty" fallback
    when n_best_size is small)."""
    n = len(feats["input_ids"])
    start = rng.normal(0, 1, (n, seq_len)).astype(np.float32)
    end = rng.normal(0, 1, (n, seq_len)).astype(np.float32)
    for f in range(n):
        ctx = [k for k, o in enumerate(feats["offsets"][f]) if o is not None]
        if feats["example_index"][f] == 3:
            start[f, 1:4] += 10
            end[f, 1:4] += 10
            continue
        if rng.random() < 0.8:
            s = int(rng.choice(ctx))
            e = min(s + int(rng.integers(0, 6)), ctx[-1])
            start[f, s] += rng.uniform(2, 8)
            end[f, e] += rng.uniform(2, 8)
        if rng.random() < 0.35:
            start[f, 0] += rng.uniform(3, 9)
            end[f, 0] += rng.uniform(3, 9)
    return start.astype(np.float32), end.astype(np.float32)


def main():
    tok = make_tokenizer()
    cols = flatten(os.path.join(SHARED, "squad", "dev-v2.0-sample.json"))
    rows = pick_questions(cols)
    batch = {k: [r[k] for r in rows] for k in rows[0]}
    feats = build_features(batch, tok, 128, 32)
    n = len(feats["input_ids"])
    start, end = make_logits(np.random.default_rng(3), feats, 128, len(rows))

    out = {
        "examples": [{"id": r["id"], "context": r["context"]} for r in rows],
        "seq_len": 128,
        "example_index": feats["example_index"],
        "offset_begin": [[-1 if o is None else o[0] for o in row] for row in feats["offsets"]],
        "offset_end": [[-1 if o is None else o[1] for o in row] for row in feats["offsets"]],
        "start_logits": [[float(x) for x in row] for row in start],
        "end_logits": [[float(x) for x in row] for row in end],
        "cases": [],
    }
    for cfg in CONFIGS:
        preds, nbest, odds = postprocess([(r["id"], r["context"]) for r in rows], feats["example_index"],
                                         feats["offsets"], start, end, **cfg)
        out["cases"].append({"config": cfg, "predictions": preds, "nbest": nbest, "null_odds": odds})
        empty = sum(1 for v in preds.values() if v == "")
        print(cfg, f"{len(preds)} predictions, {empty} empty, 'empty' fallback:",
              sum(1 for v in preds.values() if v == "empty"))
    print(f"{len(rows)} examples, {n} features")
    path = os.path.join(OUT, "squad_eval_postprocess.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
