"""The model and batch the model-parallel references share with the C++ tests
(tests/strategies/test_tensor_layers.cpp, tests/strategies/test_pipeline.cpp):
a small BertForQuestionAnswering (4 layers so that 4 pipeline stages get one
each, 4 heads so that 4 tensor-parallel ranks get one each), seeded, dropout
off, SDPA attention as hpcbench's; a batch of 8 rows with padding in some
rows and every answer inside the sequence (so that the mean over the batch is
the mean of equal micro-batches' means).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch
from safetensors.torch import save_file

CONFIG = dict(vocab_size=128, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=64,
              max_position_embeddings=64, type_vocab_size=2, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, hidden_act="gelu")
ROWS, SEQ = 8, 16
COLUMNS = ("input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions")


def make_model(seed=5):
    from transformers import BertConfig, BertForQuestionAnswering

    torch.manual_seed(seed)
    model = BertForQuestionAnswering(BertConfig(**CONFIG, attn_implementation="sdpa"))
    model.train()
    return model


def make_batch(seed=6):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, CONFIG["vocab_size"], (ROWS, SEQ), generator=g)
    types = torch.zeros(ROWS, SEQ, dtype=torch.long)
    types[:, SEQ // 2:] = 1
    mask = torch.ones(ROWS, SEQ, dtype=torch.long)
    for row, length in ((1, 11), (4, 8), (6, 13)):
        mask[row, length:] = 0
        ids[row, length:] = 0
        types[row, length:] = 0
    start = torch.randint(0, SEQ // 2, (ROWS,), generator=g)
    end = start + torch.randint(0, SEQ // 2, (ROWS,), generator=g)
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask, start_positions=start, end_positions=end)


def write_inputs(out):
    """model/ (config.json, model.safetensors) and batch.safetensors under `out`."""
    os.makedirs(out, exist_ok=True)
    make_model().save_pretrained(os.path.join(out, "model"))
    save_file(make_batch(), os.path.join(out, "batch.safetensors"))


def load_model(out):
    from transformers import BertForQuestionAnswering

    model = BertForQuestionAnswering.from_pretrained(os.path.join(out, "model"), attn_implementation="sdpa")
    model.train()
    return model
