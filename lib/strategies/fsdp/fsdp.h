#pragma once
// PyTorch's FullyShardedDataParallel with one FSDP unit per encoder layer,
// the embeddings and the QA head. FULL_SHARD ("full"): parameters, gradients
// and optimizer states sharded, each unit gathered before its forward, freed
// after it, gathered again for its backward. SHARD_GRAD_OP ("grad-op"): the
// parameters stay gathered from a unit's forward until its backward is done.
#include <memory>
#include <string>

#include "core/error.h"
#include "strategies/shard/sharded.h"

namespace hpcbench::strategies {

inline shard::ShardingPlan fsdp_plan(const std::string& sharding) {
  if (sharding != "full" && sharding != "grad-op")
    fail("--sharding {}: must be full or grad-op (hybrid is not implemented)", sharding);
  shard::ShardingPlan p;
  p.name = "fsdp";
  p.options = "sharding=" + sharding;
  p.stage = 3;
  p.sharding = sharding;
  p.shard_grads = true;
  p.shard_params = true;
  p.reshard_after_forward = sharding == "full";
  return p;
}

inline std::unique_ptr<shard::Sharded> make_fsdp(const std::string& sharding) {
  return std::make_unique<shard::Sharded>(fsdp_plan(sharding));
}

}  // namespace hpcbench::strategies
