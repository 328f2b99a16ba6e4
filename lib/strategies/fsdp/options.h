#pragma once
#include "strategies/shard/plan.h"

namespace hpcbench::strategies::fsdp {

struct FsdpOptions final : OptionsOf<FsdpOptions> {
  // full (FULL_SHARD), grad-op (SHARD_GRAD_OP) or hybrid (HYBRID_SHARD)
  std::string sharding = "full";
  int64_t shard_group = 0;  // hybrid: ranks per shard group; 0: the ranks of a node
  shard::SharedOptions shared;
  std::vector<Setting> settings() override {
    std::vector<Setting> s{
        {"sharding", "--sharding",
         "full (FULL_SHARD), grad-op (SHARD_GRAD_OP) or hybrid (HYBRID_SHARD: shard in a node, replicate across "
         "nodes)",
         &sharding},
        {"shard-group", "--shard-group-size", "with --sharding hybrid: ranks per shard group (default: the ranks "
         "of a node)", &shard_group}};
    shared.add_settings(s);
    return s;
  }
};

// PyTorch's FullyShardedDataParallel with one unit per encoder layer, the
// embeddings and the QA head. FULL_SHARD: parameters, gradients and optimizer
// states sharded, each unit gathered before its forward, freed after it,
// gathered again for its backward. SHARD_GRAD_OP: the parameters stay
// gathered from a unit's forward until its backward is done. HYBRID_SHARD:
// FULL_SHARD inside a shard group, the groups replicas of each other.
inline shard::ShardingPlan plan_of(const FsdpOptions& o) {
  shard::ShardingPlan p;
  p.name = "fsdp";
  p.shard_grads = true;
  p.shard_params = true;
  p.reshard_after_forward = o.sharding != "grad-op";
  p.hybrid = o.sharding == "hybrid";
  p.shard_group = static_cast<int>(o.shard_group);
  o.shared.apply(p);
  return p;
}

}  // namespace hpcbench::strategies::fsdp
