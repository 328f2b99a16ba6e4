#pragma once
// DeepSpeed's ZeRO: stage 1 partitions the optimizer states (gradients
// all-reduced, each rank updates its partition, the parameters are
// all-gathered), stage 2 the gradients too (reduce-scattered), stage 3 the
// parameters too (gathered unit by unit for forward and backward).
#include <memory>

#include "core/error.h"
#include "strategies/shard/sharded.h"

namespace hpcbench::strategies {

inline shard::ShardingPlan zero_plan(const StrategyOptions& o) {
  const int stage = o.zero_stage;
  if (stage < 1 || stage > 3) fail("--zero-stage {}: must be 1, 2 or 3", stage);
  auto p = shard::shared_plan("zero", o);
  p.options = "stage=" + std::to_string(stage);
  p.stage = stage;
  p.shard_grads = stage >= 2;
  p.shard_params = stage == 3;
  return p;
}

inline std::unique_ptr<shard::Sharded> make_zero(const StrategyOptions& o) {
  return std::make_unique<shard::Sharded>(zero_plan(o));
}

}  // namespace hpcbench::strategies
