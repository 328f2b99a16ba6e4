#!/usr/bin/env python3
"""Writes a tiny BERT for question answering (config.json, vocab.txt,
model.safetensors under the names transformers' BertForQuestionAnswering
saves) into each folder given, for the hub test server to serve under real
model names. numpy and safetensors only: importing transformers would cost
the test more time than everything else it does."""
import json
import shutil
import sys

import numpy as np
from safetensors.numpy import save_file

H, I, LAYERS, HEADS, POS = 32, 64, 2, 2, 512


def main():
    vocab, folders = sys.argv[1], sys.argv[2:]
    n = sum(1 for _ in open(vocab, encoding="utf-8"))
    rng = np.random.default_rng(0)
    w = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float32)
    t = {"bert.embeddings.word_embeddings.weight": w(n, H),
         "bert.embeddings.position_embeddings.weight": w(POS, H),
         "bert.embeddings.token_type_embeddings.weight": w(2, H),
         "bert.embeddings.LayerNorm.weight": np.ones(H, np.float32),
         "bert.embeddings.LayerNorm.bias": np.zeros(H, np.float32),
         "qa_outputs.weight": w(2, H), "qa_outputs.bias": np.zeros(2, np.float32)}
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            t[p + name + ".weight"], t[p + name + ".bias"] = w(H, H), np.zeros(H, np.float32)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = w(I, H), np.zeros(I, np.float32)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = w(H, I), np.zeros(H, np.float32)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + ln + ".weight"], t[p + ln + ".bias"] = np.ones(H, np.float32), np.zeros(H, np.float32)
    config = {"architectures": ["BertForQuestionAnswering"], "model_type": "bert", "vocab_size": n,
              "hidden_size": H, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "intermediate_size": I, "max_position_embeddings": POS, "type_vocab_size": 2,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0}
    for d in folders:
        save_file(t, f"{d}/model.safetensors", metadata={"format": "pt"})
        with open(f"{d}/config.json", "w") as f:
            json.dump(config, f, indent=2)
        shutil.copy(vocab, f"{d}/vocab.txt")


if __name__ == "__main__":
    main()
