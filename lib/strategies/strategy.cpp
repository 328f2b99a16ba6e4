#include "strategies/strategy.h"

#include "train/setup.h"

namespace hpcbench::strategies {

Topology replica_topology(const StrategyContext& ctx) {
  Topology t;
  t.replicas = ctx.world_size;
  t.data_ranks = ctx.world_size;
  t.data_rank = ctx.rank;
  return t;
}

ReplicatedUpdater::ReplicatedUpdater(model::BertForQuestionAnswering model, const train::OptimizerConfig& cfg,
                                     std::function<std::vector<at::Tensor>()> held)
    : model_(std::move(model)),
      params_(model_->parameters()),
      optimizer_(train::make_adamw(*model_, cfg)),
      held_(std::move(held)) {}

at::Tensor ReplicatedUpdater::clip(double max_norm) { return train::clip_grad_norm(params_, max_norm); }

void ReplicatedUpdater::step() { optimizer_->step(); }

void ReplicatedUpdater::zero_grad() { optimizer_->zero_grad(/*set_to_none=*/true); }

size_t ReplicatedUpdater::state_bytes() const {
  return train::model_state_bytes(model_->parameters(), *optimizer_, held_ ? held_() : std::vector<at::Tensor>{});
}

}  // namespace hpcbench::strategies
