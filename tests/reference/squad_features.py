"""Reference SQuAD features: transformers' run_qa.py preprocessing with the
fast BERT tokenizer, for every question of both shared samples.

Writes into $HPCBENCH_REF_DIR, per (sample, config):
  squad_features_<sample>_<max_seq_length>_<doc_stride>.bin
    int32 little-endian: n_features, seq_len, then input_ids[n*L],
    token_type_ids[n*L], attention_mask[n*L], start_positions[n],
    end_positions[n], example_index[n], offset_begin[n*L], offset_end[n*L]
    (labels from prepare_train_features; example mapping and offsets, None ->
    -1, from prepare_validation_features)
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

SHARED = os.environ["HPCBENCH_SHARED_DATA"]
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


# --- run_qa.py (transformers examples/pytorch/question-answering), verbatim
# apart from the closure variables becoming arguments (pad_on_right = True).
def prepare_train_features(examples, tokenizer, max_seq_length, doc_stride):
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized_examples = tokenizer(
        examples["question"],
        examples["context"],
        truncation="only_second",
        max_length=max_seq_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized_examples.pop("offset_mapping")
    tokenized_examples["start_positions"] = []
    tokenized_examples["end_positions"] = []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized_examples["input_ids"][i]
        if tokenizer.cls_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.cls_token_id)
        elif tokenizer.bos_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.bos_token_id)
        else:
            cls_index = 0
        sequence_ids = tokenized_examples.sequence_ids(i)
        sample_index = sample_mapping[i]
        answers = examples["answers"][sample_index]
        if len(answers["answer_start"]) == 0:
            tokenized_examples["start_positions"].append(cls_index)
            tokenized_examples["end_positions"].append(cls_index)
        else:
            start_char = answers["answer_start"][0]
            end_char = start_char + len(answers["text"][0])
            token_start_index = 0
            while sequence_ids[token_start_index] != 1:
                token_start_index += 1
            token_end_index = len(input_ids) - 1
            while sequence_ids[token_end_index] != 1:
                token_end_index -= 1
            if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
                tokenized_examples["start_positions"].append(cls_index)
                tokenized_examples["end_positions"].append(cls_index)
            else:
                while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                    token_start_index += 1
                tokenized_examples["start_positions"].append(token_start_index - 1)
                while offsets[token_end_index][1] >= end_char:
                    token_end_index -= 1
                tokenized_examples["end_positions"].append(token_end_index + 1)
    return tokenized_examples


def prepare_validation_features(examples, tokenizer, max_seq_length, doc_stride):
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized_examples = tokenizer(
        examples["question"],
        examples["context"],
        truncation="only_second",
        max_length=max_seq_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
    tokenized_examples["example_id"] = []
    for i in range(len(tokenized_examples["input_ids"])):
        sequence_ids = tokenized_examples.sequence_ids(i)
        context_index = 1
        sample_index = sample_mapping[i]
        tokenized_examples["example_id"].append(examples["id"][sample_index])
        tokenized_examples["offset_mapping"][i] = [
            (o if sequence_ids[k] == context_index else None)
            for k, o in enumerate(tokenized_examples["offset_mapping"][i])
        ]
    return tokenized_examples
# --- end of run_qa.py


def main():
    tok = make_tokenizer()
    meta = {}
    for name, rel in SAMPLES.items():
        cols = flatten(os.path.join(SHARED, rel))
        qlens = [len(tok(q.lstrip(), add_special_tokens=False)["input_ids"]) for q in cols["question"]]
        meta[name] = {"examples": len(cols["id"]), "max_question_tokens": max(qlens)}
        id_to_index = {qid: i for i, qid in enumerate(cols["id"])}
        assert len(id_to_index) == len(cols["id"]), "duplicate question ids"
        for max_len, stride in CONFIGS:
            train = prepare_train_features({k: list(v) for k, v in cols.items()}, tok, max_len, stride)
            val = prepare_validation_features({k: list(v) for k, v in cols.items()}, tok, max_len, stride)
            assert train["input_ids"] == val["input_ids"]
            n = len(train["input_ids"])
            ids = np.asarray(train["input_ids"], dtype=np.int32)
            types = np.asarray(train["token_type_ids"], dtype=np.int32)
            mask = np.asarray(train["attention_mask"], dtype=np.int32)
            start = np.asarray(train["start_positions"], dtype=np.int32)
            end = np.asarray(train["end_positions"], dtype=np.int32)
            ex = np.asarray([id_to_index[e] for e in val["example_id"]], dtype=np.int32)
            ob = np.asarray([[-1 if o is None else o[0] for o in row] for row in val["offset_mapping"]], dtype=np.int32)
            oe = np.asarray([[-1 if o is None else o[1] for o in row] for row in val["offset_mapping"]], dtype=np.int32)
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
