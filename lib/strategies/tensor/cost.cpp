#include "strategies/tensor/cost.h"

#include "core/error.h"

namespace hpcbench::strategies::tensor {

ShardMemory shard_memory(const ShardMemoryInput& in) {
  if (in.tp < 1) fail("--tp-size {}: must be at least 1", in.tp);
  const auto& m = in.model;
  ShardMemory out;
  out.params = m.embedding_params() + m.head_params() + m.layers * m.layer_params_per_rank(in.tp);
  out.state = 16.0 * static_cast<double>(out.params);
  const double a = layer_activation_bytes(m, in.micro_rows, in.seq, in.activation_bytes, in.dropout, in.scores, in.tp);
  const double input = static_cast<double>(in.activation_bytes) * static_cast<double>(in.micro_rows * in.seq * m.hidden);
  out.activations = in.recompute ? m.layers * input + a : m.layers * a;
  return out;
}

TensorCost tensor_cost(const TensorCostInput& in) {
  if (in.tp < 1) fail("--tp-size {}: must be at least 1", in.tp);
  TensorCost out;
  const double t = in.tp;
  const double layer = (in.layer_forward_s * (in.recompute ? 2 : 1) + in.layer_backward_s) / t;
  out.compute_s = in.micro * (in.layers * layer + in.other_forward_s + in.other_backward_s);
  if (in.tp > 1) {
    if (!in.allreduce_s) fail("internal: tensor cost without an all-reduce model");
    out.allreduce_one_s = in.allreduce_s(in.allreduce_bytes);
    out.allreduces = in.micro * in.layers * (in.recompute ? 6 : 4);
  }
  out.comm_exposed_s = out.allreduces * out.allreduce_one_s;
  out.optimizer_s = in.optimizer_s * in.optimizer_share;
  out.step_s = out.compute_s + out.comm_exposed_s + out.optimizer_s;
  return out;
}

}  // namespace hpcbench::strategies::tensor
