"""Reference SQuAD scores: the official evaluate-v1.1.py and evaluate-v2.0.py.

The official scripts are not kept in this repository. tools/setup.sh takes
them from the sdist of `datasets` 2.14.7 on PyPI, which ships them as its
squad and squad_v2 metrics (metrics/squad/evaluate.py, metrics/squad_v2/
evaluate.py), and puts them in the venv as share/squad-eval/evaluate_v1_1.py
and evaluate_v2_0.py; this script imports them from there. The v1.1 file is
the official script reformatted; the v2.0 file is too, except that it reads a
question's answers in the `datasets` layout (qa["answers"]["text"]) where the
official one reads a list of {"text", "answer_start"}: datasets handed to v2.0
are converted to that layout first, which changes nothing else.

v1.1 is scored with its evaluate(dataset, predictions); v2.0 with its own
parse_args() and main(), run as `evaluate-v2.0.py data.json pred.json
[-n na_prob.json -t thresh] -o eval.json` on temporary files.

Writes $HPCBENCH_REF_DIR/squad_eval_cases.json:
  pairs:    (gold, prediction) -> normalize_answer of both, exact, v1.1 f1,
            v2.0 f1, for hand-made strings that exercise the normalisation
            (case, punctuation, articles, whitespace, Unicode);
  datasets: hand-made datasets (official nested JSON, inline) and the two
            shared dev samples (by file name), each with predictions, v2.0
            na_probs / na_prob_thresh where used, and the official result.
"""
import contextlib
import importlib.util
import io
import json
import os
import random
import string
import sys
import tempfile
from pathlib import Path
from unittest import mock

SHARED = os.environ["HPCBENCH_TEST_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]
# tools/setup.sh unpacks the official scripts here, inside the venv that runs us.
SQUAD_EVAL_DIR = Path(sys.prefix) / "share" / "squad-eval"


def load_official(filename):
    path = SQUAD_EVAL_DIR / filename
    if not path.is_file():
        sys.exit(f"{path} is missing: run tools/setup.sh, which fetches the official SQuAD "
                 f"evaluation scripts into the venv ({sys.prefix})")
    spec = importlib.util.spec_from_file_location("squad_official_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


V1 = load_official("evaluate_v1_1.py")
V2 = load_official("evaluate_v2_0.py")

# The scoring functions, straight from the official scripts.
normalize_answer = V1.normalize_answer
exact_match_score = V1.exact_match_score  # v1.1: (prediction, ground_truth) -> bool
f1_score = V1.f1_score                    # v1.1: (prediction, ground_truth)
compute_exact = V2.compute_exact          # v2.0: (gold, prediction) -> 0/1
compute_f1 = V2.compute_f1                # v2.0: (gold, prediction)


def evaluate_v1(dataset, predictions):
    """evaluate-v1.1.py's evaluate(); its "Unanswered question ... will
    receive score 0." lines on stderr are dropped."""
    with contextlib.redirect_stderr(io.StringIO()):
        return V1.evaluate(dataset, predictions)


def datasets_layout(dataset):
    """Official nested "data" with every question's answers as the
    `datasets` library holds them, the layout its evaluate-v2.0.py reads."""
    def qa_row(qa):
        return {**qa, "answers": {"text": [a["text"] for a in qa["answers"]],
                                  "answer_start": [a["answer_start"] for a in qa["answers"]]}}
    return [{**article, "paragraphs": [{**p, "qas": [qa_row(qa) for qa in p["qas"]]}
                                       for p in article["paragraphs"]]}
            for article in dataset]


def evaluate_v2(dataset, preds, na_probs=None, na_prob_thresh=1.0):
    """evaluate-v2.0.py's main() on temporary files: na_probs given <=>
    --na-prob-file, na_prob_thresh is --na-prob-thresh (1.0 by default)."""
    with tempfile.TemporaryDirectory() as tmp:
        def dump(name, obj):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="ascii") as f:
                json.dump(obj, f)  # ASCII-escaped: main() opens with the locale's encoding
            return path

        argv = ["evaluate-v2.0.py", dump("data.json", {"version": "v2.0", "data": datasets_layout(dataset)}),
                dump("pred.json", preds), "--out-file", os.path.join(tmp, "eval.json")]
        if na_probs is not None:
            argv += ["--na-prob-file", dump("na_prob.json", na_probs), "--na-prob-thresh", repr(na_prob_thresh)]
        with mock.patch.object(sys, "argv", argv):
            V2.OPTS = V2.parse_args()
        assert V2.OPTS.na_prob_thresh == na_prob_thresh
        V2.main()
        with open(os.path.join(tmp, "eval.json"), encoding="ascii") as f:
            return json.load(f)


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
        norm = normalize_answer(s)
        assert V2.normalize_answer(s) == norm, repr(s)  # one normalisation for both versions
        rows.append({"s": s, "norm": norm})
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
