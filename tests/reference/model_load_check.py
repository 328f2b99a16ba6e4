"""Loads a checkpoint folder written by hpcbench (save_checkpoint) with Hugging
Face's BertForQuestionAnswering.from_pretrained and writes its logits for a
batch, so that the C++ test can check that Hugging Face reads our files.

    model_load_check.py <folder> <batch.safetensors> <out.safetensors>
"""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch
from safetensors.torch import load_file, save_file
from transformers import BertForQuestionAnswering


def main():
    folder, batch_file, out_file = sys.argv[1:4]
    torch.set_num_threads(1)
    model = BertForQuestionAnswering.from_pretrained(folder)
    model.eval()
    # Every tensor of the file must be used: from_pretrained would otherwise
    # silently initialise what it did not find.
    expected = set(model.state_dict().keys())
    found = set(load_file(os.path.join(folder, "model.safetensors")).keys())
    missing = sorted(expected - found)
    if missing:
        print("missing from our checkpoint:", missing, file=sys.stderr)
        return 1
    batch = load_file(batch_file)
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                    attention_mask=batch["attention_mask"])
    save_file({"start_logits": out.start_logits.contiguous(), "end_logits": out.end_logits.contiguous()}, out_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
