#pragma once
#include "strategies/shard/plan.h"

namespace hpcbench::strategies::zero {

struct ZeroOptions final : OptionsOf<ZeroOptions> {
  int64_t stage = 2;  // 1 (optimizer states), 2 (+ gradients), 3 (+ parameters) partitioned
  shard::SharedOptions shared;
  std::vector<Setting> settings() override {
    std::vector<Setting> s{{"stage", "--zero-stage", "1, 2 or 3 (DeepSpeed's stages)", &stage}};
    shared.add_settings(s);
    return s;
  }
};

// Stage 1 partitions the optimizer states (gradients all-reduced, each rank
// updates its partition, the parameters are all-gathered), stage 2 the
// gradients too (reduce-scattered), stage 3 the parameters too (gathered
// unit by unit for forward and backward).
inline shard::ShardingPlan plan_of(const ZeroOptions& o) {
  shard::ShardingPlan p;
  p.name = "zero";
  p.shard_grads = o.stage >= 2;
  p.shard_params = o.stage == 3;
  o.shared.apply(p);
  return p;
}

}  // namespace hpcbench::strategies::zero
