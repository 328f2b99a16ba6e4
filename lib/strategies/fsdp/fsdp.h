#pragma once
// PyTorch's FullyShardedDataParallel with one FSDP unit per encoder layer,
// the embeddings and the QA head. FULL_SHARD ("full"): parameters, gradients
// and optimizer states sharded, each unit gathered before its forward, freed
// after it, gathered again for its backward. SHARD_GRAD_OP ("grad-op"): the
// parameters stay gathered from a unit's forward until its backward is done.
// HYBRID_SHARD ("hybrid"): FULL_SHARD inside a shard group (a node's ranks,
// or --shard-group-size), the groups replicas of each other.
#include <memory>
#include <string>

#include "core/error.h"
#include "strategies/shard/sharded.h"

namespace hpcbench::strategies {

inline shard::ShardingPlan fsdp_plan(const StrategyOptions& o) {
  const std::string& sharding = o.sharding;
  if (sharding != "full" && sharding != "grad-op" && sharding != "hybrid")
    fail("--sharding {}: must be full, grad-op or hybrid", sharding);
  if (o.shard_group_size < 0) fail("--shard-group-size {}: must be positive", o.shard_group_size);
  if (o.shard_group_size > 0 && sharding != "hybrid")
    fail("--shard-group-size {} applies to --sharding hybrid only (not {})", o.shard_group_size, sharding);
  auto p = shard::shared_plan("fsdp", o);
  p.options = "sharding=" + sharding;
  p.stage = 3;
  p.sharding = sharding;
  p.shard_grads = true;
  p.shard_params = true;
  p.reshard_after_forward = sharding != "grad-op";
  p.hybrid = sharding == "hybrid";
  p.shard_group = o.shard_group_size;
  return p;
}

inline std::unique_ptr<shard::Sharded> make_fsdp(const StrategyOptions& o) {
  return std::make_unique<shard::Sharded>(fsdp_plan(o));
}

}  // namespace hpcbench::strategies
