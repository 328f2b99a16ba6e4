"""Reference SQuAD features, built the way transformers' question-answering
example run_qa.py builds them, for every question of both shared samples.

The Hugging Face fast BERT tokenizer does the real work (WordPiece, question
and context pairing, the overlapping context windows, the offsets), called
with run_qa.py's arguments. The rest (start/end labels, context-only offsets,
window -> question mapping) is our own implementation of the rules that
run_qa.py's prepare_train_features / prepare_validation_features follow;
it is not their code.

Writes into $HPCBENCH_REF_DIR, per (sample, config):
  squad_features_<sample>_<max_seq_length>_<doc_stride>.bin
    int32 little-endian: n_features, seq_len, then input_ids[n*L],
    token_type_ids[n*L], attention_mask[n*L], start_positions[n],
    end_positions[n], example_index[n], offset_begin[n*L], offset_end[n*L]
    (offsets of context tokens only, -1 elsewhere)
and squad_features_meta.json (question lengths, counts).
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
from transformers import BertTokenizerFast
from transformers.models.bert.tokenization_bert import load_vocab

SHARED = os.environ["HPCBENCH_TEST_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]
SAMPLES = {"v11": "squad/dev-v1.1-sample.json", "v20": "squad/dev-v2.0-sample.json"}
# (max_seq_length, doc_stride): run_qa's defaults, and small windows so that
# many answers straddle or touch window borders.
CONFIGS = [(384, 128), (64, 16)]


def make_tokenizer():
    # transformers 5 ignores `vocab_file=` in the constructor (it silently
    # builds a 5-token vocabulary), so the vocabulary is passed as a dict.
    vocab = load_vocab(os.path.join(SHARED, "bert-base-uncased", "vocab.txt"))
    tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    assert len(tok) == 30522, len(tok)
    return tok


def flatten(path):
    """The official nested layout -> run_qa's columns (as the `squad` /
    `squad_v2` datasets build them). Answers whose text is not at
    answer_start are dropped, as hpcbench's loader does (the samples have none)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    cols = {"id": [], "question": [], "context": [], "answers": []}
    for article in data["data"]:
        for para in article["paragraphs"]:
            ctx = para["context"]
            for qa in para["qas"]:
                answers = [a for a in qa["answers"]
                           if ctx[a["answer_start"]:a["answer_start"] + len(a["text"])] == a["text"]]
                cols["id"].append(qa["id"])
                cols["question"].append(qa["question"])
                cols["context"].append(ctx)
                cols["answers"].append({"text": [a["text"] for a in answers],
                                        "answer_start": [a["answer_start"] for a in answers]})
    return cols


def tokenize_windows(tokenizer, questions, contexts, max_seq_length, doc_stride):
    """[CLS] question [SEP] context-window [SEP] [PAD]..., max_seq_length
    tokens each. Leading whitespace is stripped from the questions; only the
    context is truncated, into as many windows as it needs, consecutive
    windows sharing doc_stride tokens."""
    return tokenizer(
        [q.lstrip() for q in questions],
        contexts,
        truncation="only_second",
        max_length=max_seq_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )


def label_window(offsets, in_context, cls_index, answer):
    """(start, end) token positions of the answer in one window.

    answer is None for a question without answers, else the character span
    [begin, end) of its first answer. Both positions are cls_index when
    there is no answer or the window's context tokens do not cover the whole
    span. Otherwise the start is the position before the first token, from
    the window's first context token on, whose offset begins after the
    answer's first character, and the end the position after the last token,
    from the window's last context token back, whose offset ends before the
    answer's end. As in run_qa.py, the start search does not stop at the
    end of the context: [SEP] and padding have offsets (0, 0), so an answer
    beginning in the window's last context token gets the last position of
    the sequence as its start.
    """
    if answer is None:
        return cls_index, cls_index
    begin, end = answer
    context = [k for k, c in enumerate(in_context) if c]
    first, last = context[0], context[-1]
    if offsets[first][0] > begin or offsets[last][1] < end:
        return cls_index, cls_index
    after = next((k for k in range(first, len(offsets)) if offsets[k][0] > begin), len(offsets))
    before = next((k for k in range(last, -1, -1) if offsets[k][1] < end), -1)
    return after - 1, before + 1


def build_features(cols, tokenizer, max_seq_length, doc_stride):
    """Every window of every question of cols (flatten()'s columns): the
    model inputs, the training labels, the question each window belongs to
    and the character offsets of its context tokens (None elsewhere)."""
    enc = tokenize_windows(tokenizer, cols["question"], cols["context"], max_seq_length, doc_stride)
    feats = {"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"],
             "attention_mask": enc["attention_mask"], "example_index": [], "offsets": [],
             "start_positions": [], "end_positions": []}
    for w, ids in enumerate(enc["input_ids"]):
        q = enc["overflow_to_sample_mapping"][w]
        in_context = [sid == 1 for sid in enc.sequence_ids(w)]
        offsets = [tuple(o) for o in enc["offset_mapping"][w]]
        cls_index = ids.index(tokenizer.cls_token_id) if tokenizer.cls_token_id in ids else 0
        answers = cols["answers"][q]
        answer = None
        if answers["answer_start"]:
            answer = (answers["answer_start"][0], answers["answer_start"][0] + len(answers["text"][0]))
        start, end = label_window(offsets, in_context, cls_index, answer)
        feats["example_index"].append(q)
        feats["offsets"].append([o if c else None for o, c in zip(offsets, in_context)])
        feats["start_positions"].append(start)
        feats["end_positions"].append(end)
    return feats


def main():
    tok = make_tokenizer()
    meta = {}
    for name, rel in SAMPLES.items():
        cols = flatten(os.path.join(SHARED, rel))
        qlens = [len(tok(q.lstrip(), add_special_tokens=False)["input_ids"]) for q in cols["question"]]
        meta[name] = {"examples": len(cols["id"]), "max_question_tokens": max(qlens)}
        assert len(set(cols["id"])) == len(cols["id"]), "duplicate question ids"
        for max_len, stride in CONFIGS:
            feats = build_features(cols, tok, max_len, stride)
            n = len(feats["input_ids"])
            ids = np.asarray(feats["input_ids"], dtype=np.int32)
            types = np.asarray(feats["token_type_ids"], dtype=np.int32)
            mask = np.asarray(feats["attention_mask"], dtype=np.int32)
            start = np.asarray(feats["start_positions"], dtype=np.int32)
            end = np.asarray(feats["end_positions"], dtype=np.int32)
            ex = np.asarray(feats["example_index"], dtype=np.int32)
            ob = np.asarray([[-1 if o is None else o[0] for o in row] for row in feats["offsets"]], dtype=np.int32)
            oe = np.asarray([[-1 if o is None else o[1] for o in row] for row in feats["offsets"]], dtype=np.int32)
            path = os.path.join(OUT, f"squad_features_{name}_{max_len}_{stride}.bin")
            with open(path + ".tmp", "wb") as f:
                np.asarray([n, max_len], dtype="<i4").tofile(f)
                for a in (ids, types, mask, start, end, ex, ob, oe):
                    a.astype("<i4").tofile(f)
            os.replace(path + ".tmp", path)
            meta[name][f"features_{max_len}_{stride}"] = n
            meta[name][f"impossible_labels_{max_len}_{stride}"] = int(((start == 0) & (end == 0)).sum())
    with open(os.path.join(OUT, "squad_features_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta))


if __name__ == "__main__":
    sys.exit(main())
