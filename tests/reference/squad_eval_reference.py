"""Reference SQuAD scores: the official evaluate-v1.1.py and evaluate-v2.0.py.

Neither the `evaluate` nor the `datasets` package (which carry the official
scripts as the `squad` / `squad_v2` metrics) is in the venv, and they would
fetch the metric code from the hub anyway. So the functions below are the
official scripts' own code, copied function by function (only the command
line and file reading are left out; v2.0's main() becomes evaluate_v2()).
Any change in them must keep them verbatim.

Writes $HPCBENCH_REF_DIR/squad_eval_cases.json:
  pairs:    (gold, prediction) -> normalize_answer of both, exact, v1.1 f1,
            v2.0 f1, for hand-made strings that exercise the normalisation
            (case, punctuation, articles, whitespace, Unicode);
  datasets: hand-made datasets (official nested JSON, inline) and the two
            shared dev samples (by file name), each with predictions, v2.0
            na_probs / na_prob_thresh where used, and the official result.
"""
import collections
import json
import os
import random
import re
import string
import sys

SHARED = os.environ["HPCBENCH_SHARED_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]


# --- evaluate-v1.1.py (official), verbatim --------------------------------
def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return (normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


def evaluate_v1(dataset, predictions):
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                total += 1
                if qa['id'] not in predictions:
                    continue  # the script prints 'Unanswered question ... will receive score 0.'
                ground_truths = list(map(lambda x: x['text'], qa['answers']))
                prediction = predictions[qa['id']]
                exact_match += metric_max_over_ground_truths(
                    exact_match_score, prediction, ground_truths)
                f1 += metric_max_over_ground_truths(
                    f1_score, prediction, ground_truths)

    exact_match = 100.0 * exact_match / total
    f1 = 100.0 * f1 / total

    return {'exact_match': exact_match, 'f1': f1}
# --- end of evaluate-v1.1.py ----------------------------------------------


# --- evaluate-v2.0.py (official), verbatim --------------------------------
# (normalize_answer is the same function as v1.1's)
def make_qid_to_has_ans(dataset):
    qid_to_has_ans = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid_to_has_ans[qa['id']] = bool(qa['answers'])
    return qid_to_has_ans


def get_tokens(s):
    if not s: return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid = qa['id']
                gold_answers = [a['text'] for a in qa['answers']
                                if normalize_answer(a['text'])]
                if not gold_answers:
                    # For unanswerable questions, only correct answer is empty string
                    gold_answers = ['']
                if qid not in preds:
                    continue  # the script prints 'Missing prediction for %s'
                a_pred = preds[qid]
                # Take max over all gold answers
                exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        if pred_na:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores.values()) / total),
            ('f1', 100.0 * sum(f1_scores.values()) / total),
            ('total', total),
        ])
    else:
        total = len(qid_list)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores[k] for k in qid_list) / total),
            ('f1', 100.0 * sum(f1_scores[k] for k in qid_list) / total),
            ('total', total),
        ])


def merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval['%s_%s' % (prefix, k)] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for i, qid in enumerate(qid_list):
        if qid not in scores: continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            if preds[qid]:
                diff = -1
            else:
                diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval['best_exact'] = best_exact
    main_eval['best_exact_thresh'] = exact_thresh
    main_eval['best_f1'] = best_f1
    main_eval['best_f1_thresh'] = f1_thresh


def evaluate_v2(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    """main() of evaluate-v2.0.py without the files: OPTS.na_prob_file given
    <=> na_probs is not None; OPTS.na_prob_thresh defaults to 1.0."""
    na_prob_file = na_probs is not None
    if not na_prob_file:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = make_qid_to_has_ans(dataset)  # maps qid to True/False
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        has_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids)
        merge_eval(out_eval, has_ans_eval, 'HasAns')
    if no_ans_qids:
        no_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids)
        merge_eval(out_eval, no_ans_eval, 'NoAns')
    if na_prob_file:
        find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return out_eval
# --- end of evaluate-v2.0.py ----------------------------------------------


# Hand-made strings: case, punctuation (ASCII only is removed), articles
# (whole words only, Unicode word boundaries), whitespace (Unicode), and
# Unicode lowercasing (one-to-many U+0130, Greek final sigma, titlecase).
STRINGS = [
    "", " ", "The Eiffel Tower", "eiffel tower", "  a   cat!  ", "Cat", "An apple, the pie.",
    "apple pie", "theater anthem", "a-b", "ab", "The the THE a an", "...", "$5.00", "500", "1,000",
    "1000", "Ünïcödé ÀÉÎ", "ünïcödé àéî", "ΟΔΟΣ", "οδος", "οδοσ", "ΑΣ.Β", "ΑΣ'", "Σ", "ΣΑ", "ΜΑΣ ΣΟΥ",
    "İstanbul", "i̇stanbul", "istanbul", "ǅemal", "ǆemal", "Straße", "STRAẞE", "straße",
    "Kelvin \u212a", "kelvin k", "non\u00a0breaking\u2003space\u3000here", "non breaking space here",
    "zero\u200bwidth", "zerowidth", "line\u2028sep\u0085next\x1cfs", "tab\tand\nnewline",
    "«quoted» — dash", "quoted dash", "it’s", "its", "it's", "éthe cat", "the\u0301 cat", "a1 b", "1a the_b",
    "ａ ｔｈｅ", "Ⅻ Ⓐ", "ⅻ ⓐ", "ı dotless", "the cat cat sat", "cat sat sat", "sat on the mat",
    "Denver Broncos", "the Denver Broncos.", "Broncos", "Carolina Panthers", "Super Bowl 50",
    "Ａn ＴＨＥ", "Łódź", "ŁÓDŹ", "日本 語", "日本語", "e\u0301cole", "école", "ÉCOLE",
]


def pair_rows():
    rng = random.Random(1)
    pairs = [(g, p) for g in STRINGS[:24] for p in STRINGS[:24]]
    pairs += [(STRINGS[i], STRINGS[i + 1]) for i in range(len(STRINGS) - 1)]
    pairs += [(rng.choice(STRINGS), rng.choice(STRINGS)) for _ in range(300)]
    rows = []
    for g, p in pairs:
        rows.append({"gold": g, "pred": p, "norm_gold": normalize_answer(g), "norm_pred": normalize_answer(p),
                     "exact": compute_exact(g, p), "exact_v1": int(exact_match_score(p, g)),
                     "f1_v1": float(f1_score(p, g)), "f1_v2": float(compute_f1(g, p))})
    return rows


def fuzz_rows():
    """Random strings over a pool of characters where Python's lower(),
    isspace() and \\w are easy to get wrong: ASCII punctuation and
    whitespace, articles, Latin/Greek/Cyrillic/Georgian/Cherokee letters,
    combining marks, Unicode spaces and punctuation, letterlike and number
    forms, fullwidth forms, CJK."""
    rng = random.Random(2)
    pool = list(string.printable) + ["the", "a", "an", "The", "AN", "Σ", "İ", " ", "-"] * 40
    for lo, hi in ((0x80, 0x250), (0x370, 0x530), (0x300, 0x370), (0x10A0, 0x1100), (0x13A0, 0x1400),
                   (0x1C80, 0x1CC0), (0x1E00, 0x2000), (0x2000, 0x2070), (0x2100, 0x2190), (0x2460, 0x2500),
                   (0x3000, 0x3010), (0xFF00, 0xFF70), (0x4E00, 0x4E10), (0xA640, 0xA6A0), (0x1F130, 0x1F190)):
        pool += [chr(c) for c in range(lo, hi)]
    rows = []
    for _ in range(3000):
        s = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 12)))
        rows.append({"s": s, "norm": normalize_answer(s)})
    return rows


def nested(version, questions):
    """An official-format dataset: one paragraph per question; its context
    holds every answer so that loaders that check answer_start keep them."""
    paras = []
    for qid, answers, impossible in questions:
        context = "Context: "
        ans = []
        for a in answers:
            ans.append({"text": a, "answer_start": len(context)})
            context += a + " | "
        qa = {"id": qid, "question": "Question " + qid + "?", "answers": ans}
        if version == "v2.0":
            qa["is_impossible"] = impossible
            if impossible:
                qa["answers"] = []
                qa["plausible_answers"] = ans
        paras.append({"context": context, "qas": [qa]})
    return {"version": version, "data": [{"title": "hand-made", "paragraphs": paras}]}


def handmade_datasets():
    out = []
    q1 = [("q1", ["Denver Broncos", "the Denver Broncos.", "Broncos"], False),
          ("q2", ["Super Bowl 50", "50"], False),
          ("q3", ["ΟΔΟΣ", "İstanbul"], False),
          ("q4", ["sat on the mat"], False),
          ("q5", ["1,000", "a thousand"], False),
          ("q6", ["«quoted» — dash"], False)]
    p1 = {"q1": "broncos!", "q2": "Bowl", "q3": "οδος", "q4": "the cat sat on the mat mat", "q5": "1000"}
    d1 = nested("1.1", q1)
    out.append({"name": "v1_handmade", "version": "v1", "json": d1, "predictions": p1,
                "expected": evaluate_v1(d1["data"], p1)})

    q2 = q1 + [("n1", ["plausible thing"], True), ("n2", ["Carolina Panthers"], True),
               ("n3", ["x"], True), ("q7", ["...", "the"], False), ("q8", ["A", "an apple"], False)]
    p2 = {"q1": "Broncos", "q2": "", "q3": "ὁδός", "q4": "mat", "q5": "a thousand", "q6": "quoted — dash",
          "n1": "", "n2": "Carolina Panthers", "n3": "the", "q7": "", "q8": "apple"}
    d2 = nested("v2.0", q2)
    out.append({"name": "v2_handmade", "version": "v2", "json": d2, "predictions": p2,
                "expected": evaluate_v2(d2["data"], p2)})
    na = {qid: [0.9, 0.1, 0.5, 0.5, 0.2, 0.7, 0.6, 0.3, 0.5, 0.95, 0.05][i] for i, qid in enumerate(p2)}
    for thresh in (1.0, 0.5, 0.0):
        out.append({"name": f"v2_handmade_na_{thresh}", "version": "v2", "json": d2, "predictions": p2,
                    "na_probs": na, "na_prob_thresh": thresh, "expected": evaluate_v2(d2["data"], p2, na, thresh)})
    # Only unanswerable questions: no HasAns_ keys.
    d3 = nested("v2.0", [("n1", ["a"], True), ("n2", [], True)])
    p3 = {"n1": "", "n2": "something"}
    out.append({"name": "v2_noans_only", "version": "v2", "json": d3, "predictions": p3,
                "expected": evaluate_v2(d3["data"], p3)})
    return out


def synthetic_prediction(rng, qa, context):
    """Answers a model might give: right, another gold, cut, padded, shouted,
    empty, a plausible answer, or a piece of the context."""
    golds = [a["text"] for a in qa["answers"]] or [a["text"] for a in qa.get("plausible_answers", [])] or [""]
    kind = rng.randrange(9)
    g = golds[min(1, len(golds) - 1)] if kind == 1 else golds[0]
    words = g.split()
    if kind == 2:
        return " ".join(words[: max(1, len(words) // 2)])
    if kind == 3:
        return ""
    if kind == 4:
        return "the " + g + " and more"
    if kind == 5:
        return g.upper() + "!"
    if kind == 6:
        start = rng.randrange(max(1, len(context) - 40))
        return context[start:start + rng.randrange(1, 40)]
    if kind == 7:
        return " ".join(words[1:])
    return g


def shared_datasets():
    out = []
    for name, file, version in (("v1_shared", "dev-v1.1-sample.json", "v1"),
                                ("v2_shared", "dev-v2.0-sample.json", "v2")):
        with open(os.path.join(SHARED, "squad", file), encoding="utf-8") as f:
            data = json.load(f)["data"]
        rng = random.Random(7)
        preds, na = {}, {}
        for article in data:
            for p in article["paragraphs"]:
                for qa in p["qas"]:
                    if version == "v1" and rng.random() < 0.03:
                        continue  # unanswered: scores 0 in v1.1
                    preds[qa["id"]] = synthetic_prediction(rng, qa, p["context"])
                    na[qa["id"]] = round(rng.random(), 1)  # ties on purpose
        if version == "v1":
            out.append({"name": name, "version": version, "file": file, "predictions": preds,
                        "expected": evaluate_v1(data, preds)})
        else:
            out.append({"name": name, "version": version, "file": file, "predictions": preds,
                        "expected": evaluate_v2(data, preds)})
            for thresh in (1.0, 0.45):
                out.append({"name": f"{name}_na_{thresh}", "version": version, "file": file,
                            "predictions": preds, "na_probs": na, "na_prob_thresh": thresh,
                            "expected": evaluate_v2(data, preds, na, thresh)})
    return out


def main():
    result = {"pairs": pair_rows(), "fuzz": fuzz_rows(), "datasets": handmade_datasets() + shared_datasets()}
    path = os.path.join(OUT, "squad_eval_cases.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    os.replace(path + ".tmp", path)
    for d in result["datasets"]:
        print(d["name"], json.dumps(d["expected"]))


if __name__ == "__main__":
    sys.exit(main())
