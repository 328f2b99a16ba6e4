#pragma once
// The sharded engine's state, which its parts work on: the flat parameters
// and their units (flat_param.h), the static storage they live in
// (buffers.h), where the partitions are cut (groups.h),
// the gathers around each unit (gathers.h), the gradient reductions
// (reduction.h), the updater (updater.h) and the accounting of what a rank
// holds (accounting.h); sharded.h ties them to the Strategy interface.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "strategies/shard/flat_param.h"
#include "strategies/shard/plan.h"
#include "strategies/strategy.h"

namespace hpcbench::strategies::shard {

// One sharding unit (the embeddings, an encoder layer, the QA head) and its
// flat parameters.
struct Unit {
  std::string name;
  // Its collectives' names, made once (set-up) rather than per collective.
  std::string gather_what, reduce_what, replicate_what;
  std::vector<size_t> flats;   // indices into ShardState::flats
  std::vector<size_t> params;  // indices into ShardState::params
  size_t pending = 0;          // gradients still to come this backward
  bool gathered = true;
  torch::nn::Module* module = nullptr;
  // Its slots in the static rings (buffers.h): where its gathered
  // parameters and its full gradients live.
  size_t gather_slot = 0, grad_slot = 0;
  // An all-gather in flight (prefetch): its works.
  std::vector<dist::Pending> inflight;
};

// A flat parameter's gradient reduction in flight (its buffers are the
// flat's static send and part views).
struct Reduction {
  size_t flat = 0;
  const Unit* unit = nullptr;
  dist::Pending work;
};

// Where the partitions are cut: over `shard` (the job, or a group of it),
// and, when it is a group, the ranks holding the same partition in the other
// groups (`replicas`), over which the reduced gradients are averaged.
struct Placement {
  dist::Comm* shard = nullptr;
  std::unique_ptr<dist::Comm> group;     // the shard group, when not the whole job
  std::unique_ptr<dist::Comm> replicas;  // null: no other group
};

struct ShardState {
  ShardingPlan plan;
  StrategyContext ctx;
  Placement place;
  c10::ScalarType compute_dtype = c10::kFloat;
  c10::ScalarType reduce_dtype = c10::kFloat;
  bool mixed = false;          // compute dtype differs from the fp32 masters
  bool master_views = false;   // the model holds fp32 parameters (gather_whole under mixed precision)
  bool new_step = true;
  std::vector<FlatParam> flats;
  std::vector<Unit> units;
  std::vector<at::Tensor> params;
  std::vector<size_t> unit_of;  // param -> unit
  std::vector<Reduction> reductions;
  // The static rings (buffers.h), made once at set-up: gathered units,
  // full gradients in the compute dtype, the same in the reduce dtype when
  // it differs, and this rank's reduce-scattered part.
  std::vector<at::Tensor> gather_ring, grad_ring, send_ring, part_ring;
  const torch::optim::Optimizer* optimizer = nullptr;  // the updater's, whose states the accounting counts

  dist::Comm& comm() const { return *ctx.comm; }
  dist::Comm& shard_comm() const { return *place.shard; }
};

}  // namespace hpcbench::strategies::shard
