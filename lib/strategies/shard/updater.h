#pragma once
// The optimizer of a sharded run: AdamW over this rank's partitions, the
// global norm from the partitions' partial norms, the replicated parameters
// gathered after the step, the whole model gathered on demand.
#include <memory>

#include "strategies/shard/state.h"
#include "strategies/updater.h"

namespace hpcbench::strategies::shard {

class ShardedUpdater final : public Updater {
 public:
  ShardedUpdater(ShardState& state, const train::OptimizerConfig& cfg);
  ~ShardedUpdater() override;
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  std::vector<at::Tensor> params() const override;  // the partitions, whose gradients are unscaled
  at::Tensor clip(double max_norm) override;
  bool all_finite(bool local_finite) override;
  void step() override;
  void zero_grad() override;
  void gather_whole() override;
  size_t state_bytes() const override;

 private:
  ShardState& s_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

}  // namespace hpcbench::strategies::shard
