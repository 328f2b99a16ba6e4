"""Reference SQuAD post-processing: transformers' utils_qa.py
postprocess_qa_predictions on random logits over real features.

The installed transformers package does not ship the examples folder, so
postprocess_qa_predictions below is utils_qa.py's function copied line by
line (examples/pytorch/question-answering/utils_qa.py); only the logging,
tqdm and file writing are left out. Keep it verbatim.

Features: run_qa.py's prepare_validation_features (from squad_features.py)
with the fast BERT tokenizer, max_seq_length 128 and doc_stride 32, on 30
questions of the shared dev-v2.0 sample (paragraphs with long contexts and
non-ASCII text), so that most examples have several windows.

Writes $HPCBENCH_REF_DIR/squad_eval_postprocess.json: the examples (id,
context), the features (seq_len, example_index, offsets with None -> -1),
float32 start/end logits, and for several configurations (v1/v2, n_best_size,
max_answer_length, null_score_diff_threshold) the predictions, the n-best
lists and the null odds utils_qa.py computes.
"""
import collections
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from squad_features import flatten, make_tokenizer, prepare_validation_features  # noqa: E402

SHARED = os.environ["HPCBENCH_SHARED_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]


# --- utils_qa.py postprocess_qa_predictions, verbatim but for logging/tqdm/files
def postprocess_qa_predictions(
    examples,
    features,
    predictions,
    version_2_with_negative=False,
    n_best_size=20,
    max_answer_length=30,
    null_score_diff_threshold=0.0,
):
    assert len(predictions) == 2, "`predictions` should be a tuple with two elements (start_logits, end_logits)."
    all_start_logits, all_end_logits = predictions

    assert len(predictions[0]) == len(features), f"Got {len(predictions[0])} predictions and {len(features)} features."

    # Build a map example to its corresponding features.
    example_id_to_index = {k: i for i, k in enumerate(examples["id"])}
    features_per_example = collections.defaultdict(list)
    for i, feature in enumerate(features):
        features_per_example[example_id_to_index[feature["example_id"]]].append(i)

    # The dictionaries we have to fill.
    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    if version_2_with_negative:
        scores_diff_json = collections.OrderedDict()

    # Let's loop over all the examples!
    for example_index, example in enumerate(examples):
        # Those are the indices of the features associated to the current example.
        feature_indices = features_per_example[example_index]

        min_null_prediction = None
        prelim_predictions = []

        # Looping through all the features associated to the current example.
        for feature_index in feature_indices:
            # We grab the predictions of the model for this feature.
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            # This is what will allow us to map some the positions in our logits to span of texts in the original
            # context.
            offset_mapping = features[feature_index]["offset_mapping"]
            # Optional `token_is_max_context`, if provided we will remove answers that do not have the maximum context
            # available in the current feature.
            token_is_max_context = features[feature_index].get("token_is_max_context", None)

            # Update minimum null prediction.
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {
                    "offsets": (0, 0),
                    "score": feature_null_score,
                    "start_logit": start_logits[0],
                    "end_logit": end_logits[0],
                }

            # Go through all possibilities for the `n_best_size` greater start and end logits.
            start_indexes = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
            end_indexes = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    # Don't consider out-of-scope answers, either because the indices are out of bounds or correspond
                    # to part of the input_ids that are not in the context.
                    if (
                        start_index >= len(offset_mapping)
                        or end_index >= len(offset_mapping)
                        or offset_mapping[start_index] is None
                        or offset_mapping[end_index] is None
                    ):
                        continue
                    # Don't consider answers with a length that is either < 0 or > max_answer_length.
                    if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                        continue
                    # Don't consider answer that don't have the maximum context available (if such information is
                    # provided).
                    if token_is_max_context is not None and not token_is_max_context.get(str(start_index), False):
                        continue
                    prelim_predictions.append(
                        {
                            "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                            "score": start_logits[start_index] + end_logits[end_index],
                            "start_logit": start_logits[start_index],
                            "end_logit": end_logits[end_index],
                        }
                    )
        if version_2_with_negative:
            # Add the minimum null prediction
            prelim_predictions.append(min_null_prediction)
            null_score = min_null_prediction["score"]

        # Only keep the best `n_best_size` predictions.
        predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]

        # Add back the minimum null prediction if it was removed because of its low score.
        if version_2_with_negative and not any(p["offsets"] == (0, 0) for p in predictions):
            predictions.append(min_null_prediction)

        # Use the offsets to gather the answer text in the original context.
        context = example["context"]
        for pred in predictions:
            offsets = pred.pop("offsets")
            pred["text"] = context[offsets[0] : offsets[1]]

        # In the very rare edge case we have not a single non-null prediction, we create a fake prediction to avoid
        # failure.
        if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
            predictions.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})

        # Compute the softmax of all scores (we do it with numpy to stay independent from torch/tf in this file, using
        # the LogSumExp trick).
        scores = np.array([pred.pop("score") for pred in predictions])
        exp_scores = np.exp(scores - np.max(scores))
        probs = exp_scores / exp_scores.sum()

        # Include the probabilities in our predictions.
        for prob, pred in zip(probs, predictions):
            pred["probability"] = prob

        # Pick the best prediction. If the null answer is not possible, this is easy.
        if not version_2_with_negative:
            all_predictions[example["id"]] = predictions[0]["text"]
        else:
            # Otherwise we first need to find the best non-empty prediction.
            i = 0
            while predictions[i]["text"] == "":
                i += 1
            best_non_null_pred = predictions[i]

            # Then we compare to the null prediction using the threshold.
            score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
            scores_diff_json[example["id"]] = float(score_diff)  # To be JSON-serializable.
            if score_diff > null_score_diff_threshold:
                all_predictions[example["id"]] = ""
            else:
                all_predictions[example["id"]] = best_non_null_pred["text"]

        # Make `predictions` JSON-serializable by casting np.float back to float.
        all_nbest_json[example["id"]] = [
            {k: (float(v) if isinstance(v, (np.float16, np.float32, np.float64)) else v) for k, v in pred.items()}
            for pred in predictions
        ]

    return all_predictions, all_nbest_json, (scores_diff_json if version_2_with_negative else {})
# --- end of utils_qa.py


class Table:
    """The bits of a datasets.Dataset that utils_qa.py uses: rows by index
    and iteration, columns by name."""

    def __init__(self, rows):
        self.rows = rows

    def __getitem__(self, key):
        return [r[key] for r in self.rows] if isinstance(key, str) else self.rows[key]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)


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
    ids = {e: i for i, e in enumerate(dict.fromkeys(feats["example_id"]))}
    for f in range(n):
        ctx = [k for k, o in enumerate(feats["offset_mapping"][f]) if o is not None]
        if ids[feats["example_id"][f]] == 3:
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
    examples = Table(rows)
    batch = {k: [r[k] for r in rows] for k in rows[0]}
    feats = prepare_validation_features(batch, tok, 128, 32)
    n = len(feats["input_ids"])
    features = Table([{"example_id": feats["example_id"][i], "offset_mapping": feats["offset_mapping"][i]}
                      for i in range(n)])
    start, end = make_logits(np.random.default_rng(3), feats, 128, len(rows))

    id_to_index = {r["id"]: i for i, r in enumerate(rows)}
    out = {
        "examples": [{"id": r["id"], "context": r["context"]} for r in rows],
        "seq_len": 128,
        "example_index": [id_to_index[e] for e in feats["example_id"]],
        "offset_begin": [[-1 if o is None else o[0] for o in row] for row in feats["offset_mapping"]],
        "offset_end": [[-1 if o is None else o[1] for o in row] for row in feats["offset_mapping"]],
        "start_logits": [[float(x) for x in row] for row in start],
        "end_logits": [[float(x) for x in row] for row in end],
        "cases": [],
    }
    for cfg in CONFIGS:
        preds, nbest, odds = postprocess_qa_predictions(examples, features, (start, end), **cfg)
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
