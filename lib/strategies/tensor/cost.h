#pragma once
// What Megatron-style tensor parallelism costs, without tensors: a shard's
// memory (its slices of every layer, the replicated embeddings, head,
// LayerNorms and row-parallel biases) and the step time predict gives.
#include <cstdint>
#include <functional>

#include "specs/model_shape.h"

namespace hpcbench::strategies::tensor {

struct ShardMemoryInput {
  ModelShape model;
  int tp = 1;
  int64_t micro_rows = 1, seq = 128;
  int activation_bytes = 4;
  bool dropout = true;
  bool scores = true;
  bool recompute = false;
};

struct ShardMemory {
  int64_t params = 0;      // embeddings + head + L · layer_params_per_rank(T)
  double state = 0;        // 16 bytes each
  double activations = 0;  // L layers of layer_activation_bytes(.., T) for one micro-batch
  double total() const { return state + activations; }
};
ShardMemory shard_memory(const ShardMemoryInput& in);

struct TensorCostInput {
  int tp = 1;
  int layers = 12;
  int micro = 1;  // micro-batches (gradient accumulation) per step
  // One micro-batch on one device, whole: the encoder layers' forward and
  // backward (split over the ranks), and the rest (embeddings, head, loss:
  // replicated, each rank computes it whole).
  double layer_forward_s = 0, layer_backward_s = 0;
  double other_forward_s = 0, other_backward_s = 0;
  double allreduce_bytes = 0;  // one all-reduce: rows · seq · hidden · activation bytes
  // Seconds of an all-reduce of that many bytes over the tensor-parallel
  // group (the intra-node link: predict's collective model).
  std::function<double(double bytes)> allreduce_s;
  bool recompute = false;  // the recomputed forward repeats its compute and its two all-reduces
  double optimizer_s = 0;  // the whole model's optimizer step on one device
  double optimizer_share = 1;  // this shard's fraction of the parameters
};

struct TensorCost {
  double step_s = 0;
  double compute_s = 0;
  int allreduces = 0;         // per step
  double allreduce_one_s = 0;
  double comm_exposed_s = 0;  // all of it: each all-reduce sits on the critical path
  double optimizer_s = 0;
};

// Per micro-batch and layer, 2 all-reduces forward (after attention and
// MLP), 2 backward (their inputs' gradients), and with recomputation the
// forward's 2 again; none overlaps computation (each one's result is the
// next operation's input). Compute: layers / T, the rest whole.
TensorCost tensor_cost(const TensorCostInput& in);

}  // namespace hpcbench::strategies::tensor
