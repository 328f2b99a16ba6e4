#include "strategies/shard/updater.h"

#include <ATen/ATen.h>

#include "strategies/shard/accounting.h"
#include "strategies/shard/gathers.h"

namespace hpcbench::strategies::shard {

ShardedUpdater::ShardedUpdater(ShardState& state, const train::OptimizerConfig& cfg) : s_(state) {
  // A decayed and a non-decayed group, as make_adamw builds them; ATen's
  // fused kernel steps them.
  std::vector<at::Tensor> decay, no_decay;
  for (auto& f : s_.flats) (f.decay ? decay : no_decay).push_back(f.shard);
  optimizer_ = train::make_adamw(std::move(decay), std::move(no_decay), cfg);
  s_.optimizer = optimizer_.get();
}

ShardedUpdater::~ShardedUpdater() { s_.optimizer = nullptr; }

std::vector<at::Tensor> ShardedUpdater::params() const {
  std::vector<at::Tensor> out;
  for (auto& f : s_.flats) out.push_back(f.shard);
  return out;
}

// clip_grad_norm_ over the whole model: the partial squared norms of the
// partitions summed over the ranks one copy is cut over.
at::Tensor ShardedUpdater::clip(double max_norm) {
  at::NoGradGuard no_grad;
  // The partitions' gradients are fp32 (reduced into fp32 buffers).
  std::vector<at::Tensor> grads;
  for (auto& f : s_.flats)
    if (f.shard.grad().defined()) grads.push_back(f.shard.grad());
  // A few operations whatever the number of flat parameters (FSDP2 clips
  // with foreach as well): this rank's squared partial norm ...
  auto sq = grads.empty() ? at::zeros({1}, s_.flats.front().full.options().dtype(at::kFloat))
                          : at::stack(at::_foreach_norm(grads, 2)).square().sum().reshape({1});
  // ... summed over the partitions of one copy (other groups hold the same).
  s_.shard_comm().allreduce(sq, false, "all_reduce of the gradient norm");
  auto norm = sq.sqrt().squeeze();  // 0-dim: the form _foreach_mul_ takes
  // torch.nn.utils.clip_grad_norm_: scaled by min(1, max_norm / (norm + 1e-6)).
  auto coef = (max_norm / (norm + 1e-6)).clamp_max(1.0);
  if (!grads.empty()) at::_foreach_mul_(grads, coef);
  return norm;
}

bool ShardedUpdater::all_finite(bool local_finite) {
  auto bad = at::full({1}, local_finite ? 0.0f : 1.0f, at::TensorOptions().device(s_.ctx.device));
  s_.comm().allreduce(bad, false, "all_reduce of the fp16 overflow verdict");
  // A host sync, once per step and only under fp16 loss scaling: every rank
  // must skip or take the step on the same verdict (torch's GradScaler reads
  // found_inf on the host as well).
  return bad.item<float>() == 0.0f;
}

// The step; then replicated parameters are all-gathered from the updated
// partitions.
void ShardedUpdater::step() {
  optimizer_->step();
  s_.new_step = true;
  if (s_.plan.shard_params) return;  // the partitions are the parameters
  at::NoGradGuard no_grad;
  for (auto& f : s_.flats) s_.shard_comm().allgather(f.full, gather_input(s_, f), "all_gather of the updated parameters");
}

// Zeroed in place, never set to none: the fp32 gradients are static storage
// (buffers.h) that the next step's reductions accumulate into.
void ShardedUpdater::zero_grad() {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (auto& f : s_.flats) grads.push_back(f.grad_full.defined() ? f.grad_full : f.shard.grad());
  at::_foreach_zero_(grads);
}

void ShardedUpdater::gather_whole() { unshard_model(s_); }

// Parameters, gradients and optimizer states this rank holds: its
// partitions, Adam's states and the engine's static rings.
size_t ShardedUpdater::state_bytes() const { return shard::state_bytes(s_); }

}  // namespace hpcbench::strategies::shard
