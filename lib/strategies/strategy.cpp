#include "strategies/strategy.h"

#include <ATen/ATen.h>

#include "train/setup.h"

namespace hpcbench::strategies {

Topology replica_topology(const StrategyContext& ctx) {
  Topology t;
  t.replicas = ctx.world_size;
  t.data_ranks = ctx.world_size;
  t.data_rank = ctx.rank;
  return t;
}

std::unique_ptr<torch::optim::AdamW> adamw_of_masters(torch::nn::Module& model, const MasterWeights& masters,
                                                      const train::OptimizerConfig& cfg) {
  std::vector<at::Tensor> decay, no_decay;
  size_t k = 0;
  for (auto& p : model.named_parameters(true)) {
    if (!p.value().requires_grad()) continue;
    (train::decays(p.key()) ? decay : no_decay).push_back(masters.masters().at(k++));
  }
  return train::make_adamw(std::move(decay), std::move(no_decay), cfg);
}

ReplicatedUpdater::ReplicatedUpdater(model::BertForQuestionAnswering model, const train::OptimizerConfig& cfg,
                                     std::function<std::vector<at::Tensor>()> held,
                                     std::shared_ptr<MasterWeights> masters)
    : model_(std::move(model)),
      params_(model_->parameters()),
      optimizer_(masters ? adamw_of_masters(*model_, *masters, cfg) : train::make_adamw(*model_, cfg)),
      held_(std::move(held)),
      masters_(std::move(masters)) {}

at::Tensor ReplicatedUpdater::clip(double max_norm) {
  if (!masters_) return train::clip_grad_norm(params_, max_norm);
  if (masters_->fused()) return masters_->clip_fused(max_norm);
  // The norm of the fp32 copies of the gradients, as the masters step them.
  return train::clip_grad_norm(masters_->clip_gradients(), max_norm);
}

void ReplicatedUpdater::step() {
  if (masters_) masters_->step(*optimizer_);
  else optimizer_->step();
}

void ReplicatedUpdater::zero_grad() {
  if (held_) {
    // The gradients are views of the held buffers (ddp's buckets): zeroed
    // there and kept, so that backward accumulates into them in place
    // rather than allocating gradients to be copied back in. With masters
    // the optimizer's own (fp32) gradients are released as before.
    at::NoGradGuard no_grad;
    auto held = held_();
    at::_foreach_zero_(held);
    if (masters_) optimizer_->zero_grad(/*set_to_none=*/true);
    return;
  }
  if (masters_) masters_->zero_grad(*optimizer_);
  else optimizer_->zero_grad(/*set_to_none=*/true);
}

void ReplicatedUpdater::gather_whole() {
  if (masters_) masters_->use_masters();
}

size_t ReplicatedUpdater::state_bytes() const {
  auto held = held_ ? held_() : std::vector<at::Tensor>{};
  if (masters_)
    for (auto& t : masters_->held()) held.push_back(t);
  return train::model_state_bytes(model_->parameters(), *optimizer_, held);
}

}  // namespace hpcbench::strategies
