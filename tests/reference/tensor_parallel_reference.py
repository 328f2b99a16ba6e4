"""DTensor's tensor parallelism (torch.distributed.tensor.parallel.
parallelize_module with ColwiseParallel / RowwiseParallel) on transformers'
BertForQuestionAnswering, Gloo on CPU, over 2 and 4 ranks: the truth for
hpcbench's Megatron-style split (tests/strategies/test_tensor_layers.cpp).

Every encoder layer gets Megatron's plan: query, key, value and
intermediate.dense column-parallel, attention.output.dense and output.dense
row-parallel; embeddings and the QA head stay replicated, as in hpcbench.
One forward and backward of the shared batch (model_parallel_common.py) with
Hugging Face's own loss. Writes, under $HPCBENCH_REF_DIR/tensor_parallel/:
model/, batch.safetensors (the inputs), and dtensor_tp<T>.safetensors:
start_logits, end_logits, loss, grad.<name> (whole gradients).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file

from ddp_reference import free_port
from model_parallel_common import load_model, write_inputs

PLAN_COLWISE = ("attention.self.query", "attention.self.key", "attention.self.value", "intermediate.dense")
PLAN_ROWWISE = ("attention.output.dense", "output.dense")


def worker(rank, world, out, port):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    model = load_model(out)
    plan = {name: ColwiseParallel() for name in PLAN_COLWISE}
    plan.update({name: RowwiseParallel() for name in PLAN_ROWWISE})
    for layer in model.bert.encoder.layer:
        parallelize_module(layer, mesh, plan)
    batch = load_file(os.path.join(out, "batch.safetensors"))
    o = model(**batch)
    o.loss.backward()
    result = {"start_logits": o.start_logits.detach().contiguous(), "end_logits": o.end_logits.detach().contiguous(),
              "loss": o.loss.detach().reshape(1)}
    for name, p in model.named_parameters():  # the same order on every rank: the gathers pair up
        g = p.grad
        result["grad." + name] = (g.full_tensor() if hasattr(g, "full_tensor") else g).detach().contiguous()
    if rank == 0:
        save_file(result, os.path.join(out, f"dtensor_tp{world}.safetensors"))
    dist.barrier()
    dist.destroy_process_group()


def main():
    out = os.path.join(os.environ["HPCBENCH_REF_DIR"], "tensor_parallel")
    write_inputs(out)
    for world in (2, 4):
        path = os.path.join(out, f"dtensor_tp{world}.safetensors")
        if os.path.exists(path):
            os.remove(path)
        torch.multiprocessing.spawn(worker, args=(world, out, free_port()), nprocs=world, join=True)
    print(f"DTensor tensor-parallel reference written to {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
