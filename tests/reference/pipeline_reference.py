"""PyTorch's own pipeline parallelism (torch.distributed.pipelining:
PipelineStage, ScheduleGPipe, Schedule1F1B) on transformers'
BertForQuestionAnswering, Gloo on CPU: the truth for hpcbench's pipeline
(tests/strategies/test_pipeline.cpp).

The model and batch are model_parallel_common.py's; the model is cut as
hpcbench cuts it by default (balanced: 2 stages of 2 layers, 4 of 1), the
embeddings on the first stage, the QA head on the last, where the loss
function is Hugging Face's QA loss on the head's logits. One step per
schedule and micro-batch count: P=2 with M=2 and 4, P=4 with M=4 and 8
(Schedule1F1B needs M >= P), GPipe and 1F1B each, the gradients scaled by
1/M as pipelining does by default (the mean of the micro-batches' losses).
The attention mask reaches every stage by micro-batch index (each stage
module runs its micro-batches' forwards in order), as hpcbench gives every
stage the micro-batch's mask. Every stage records the order in which its
forwards and backwards ran (a hook on each micro-batch's stage output fires
when its backward starts).

Writes, under $HPCBENCH_REF_DIR/pipeline/: model/, batch.safetensors and per
run pp<P>_<schedule>_m<M>_rank<r>.safetensors (grad.<name> of the stage's
parameters; losses on the last stage) and .json (the order).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from ddp_reference import free_port
from model_parallel_common import CONFIG, load_model, write_inputs

RUNS = {2: [("gpipe", 2), ("gpipe", 4), ("1f1b", 2), ("1f1b", 4)],
        4: [("gpipe", 4), ("gpipe", 8), ("1f1b", 4), ("1f1b", 8)]}


def balanced(layers, stages):
    """numpy.array_split's cut, as hpcbench's model::stage_layer_counts."""
    counts = [layers // stages + (1 if s < layers % stages else 0) for s in range(stages)]
    starts = [sum(counts[:s]) for s in range(stages)]
    return [list(range(starts[s], starts[s] + counts[s])) for s in range(stages)]


class Stage(torch.nn.Module):
    def __init__(self, model, layers, first, last, masks, order):
        super().__init__()
        self.first, self.last = first, last
        self.embeddings = model.bert.embeddings if first else None
        self.layers = torch.nn.ModuleList([model.bert.encoder.layer[i] for i in layers])
        self.qa_outputs = model.qa_outputs if last else None
        self.config = model.config
        self.masks, self.order, self.calls = masks, order, 0

    def forward(self, x, token_type_ids=None):
        m = self.calls
        self.calls += 1
        self.order.append(f"F{m}")
        h = self.embeddings(input_ids=x, token_type_ids=token_type_ids) if self.first else x
        # The mask BertModel builds for its layers (transformers' masking_utils).
        from transformers.masking_utils import create_bidirectional_mask
        extended = create_bidirectional_mask(config=self.config, inputs_embeds=h, attention_mask=self.masks[m])
        for layer in self.layers:
            h = layer(h, attention_mask=extended)
        out = self.qa_outputs(h) if self.last else h
        out.register_hook(lambda g, m=m: self.order.append(f"B{m}"))
        return out


def qa_loss(logits, target):
    """BertForQuestionAnswering's loss on the head's [b, s, 2] logits."""
    start_logits, end_logits = logits.split(1, dim=-1)
    ignored = logits.size(1)
    ce = torch.nn.CrossEntropyLoss(ignore_index=ignored)
    start, end = target[:, 0].clamp(0, ignored), target[:, 1].clamp(0, ignored)
    return (ce(start_logits.squeeze(-1).contiguous(), start) + ce(end_logits.squeeze(-1).contiguous(), end)) / 2


def run(rank, world, out, schedule, micro):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    model = load_model(out)
    batch = load_file(os.path.join(out, "batch.safetensors"))
    rows = batch["input_ids"].shape[0] // micro
    masks = list(batch["attention_mask"].split(rows))
    order = []
    layers = balanced(CONFIG["num_hidden_layers"], world)[rank]
    first, last = rank == 0, rank == world - 1
    stage_module = Stage(model, layers, first, last, masks, order)
    hidden = torch.zeros(rows, batch["input_ids"].shape[1], CONFIG["hidden_size"])
    inputs = (batch["input_ids"][:rows], batch["token_type_ids"][:rows]) if first else (hidden,)
    outputs = torch.zeros(rows, batch["input_ids"].shape[1], 2) if last else hidden
    stage = PipelineStage(stage_module, rank, world, torch.device("cpu"), input_args=inputs, output_args=outputs)
    kind = ScheduleGPipe if schedule == "gpipe" else Schedule1F1B
    sched = kind(stage, n_microbatches=micro, loss_fn=qa_loss)
    target = torch.stack([batch["start_positions"], batch["end_positions"]], dim=1)
    losses = []
    if first and last:
        sched.step(batch["input_ids"], batch["token_type_ids"], target=target, losses=losses)
    elif first:
        sched.step(batch["input_ids"], batch["token_type_ids"])
    elif last:
        sched.step(target=target, losses=losses)
    else:
        sched.step()
    result = {"grad." + name: p.grad.detach().contiguous() for name, p in prefixed(stage_module, layers)}
    if last:
        result["losses"] = torch.stack([l.detach() for l in losses])
    name = f"pp{world}_{schedule}_m{micro}_rank{rank}"
    save_file(result, os.path.join(out, name + ".safetensors"))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"order": order, "layers": layers}, f)


def prefixed(stage_module, layers):
    """The stage's parameters under the whole model's (Hugging Face) names."""
    for name, p in stage_module.named_parameters():
        if name.startswith("embeddings."):
            yield "bert." + name, p
        elif name.startswith("layers."):
            index, rest = name[len("layers."):].split(".", 1)
            yield f"bert.encoder.layer.{layers[int(index)]}.{rest}", p
        else:
            yield name, p


def worker(rank, world, out, port):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for schedule, micro in RUNS[world]:
        run(rank, world, out, schedule, micro)
        dist.barrier()
    dist.destroy_process_group()


def main():
    out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "pipeline")
    write_inputs(out)
    for f in os.listdir(out):
        if f.startswith("pp"):
            os.remove(os.path.join(out, f))
    for world in RUNS:
        torch.multiprocessing.spawn(worker, args=(world, out, free_port()), nprocs=world, join=True)
    print(f"torch.distributed.pipelining reference written to {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
