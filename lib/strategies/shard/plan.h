#pragma once
// What the sharded engine partitions and when (torch-free): the strategies
// built on it (lib/strategies/zero, fsdp) each turn their options into one
// plan, which the engine runs, the memory model counts and the scaling model
// replays.
#include <string>
#include <vector>

#include "core/settings.h"
#include "specs/spec.h"

namespace hpcbench::strategies::shard {

// What zero's and fsdp's specs share: both run on the sharded engine, which
// needs a communicator and keeps its storage on the host's books.
class ShardedSpec : public Spec {
 public:
  Traits traits() const override {
    Traits t;
    t.needs_comm = true;
    return t;
  }
  // zero's and fsdp's engine settings, one place for both. Capturable: the
  // engine's storage is static (buffers.h), its schedule the same every step
  // and decided on the host, and it reads no device value
  // (tests/strategies/test_cuda_graph.cpp); the fused model runs on their
  // bf16 compute copies (tests/strategies/test_fused_parity.cpp).
  EngineSupport engine(const Options&) const override {
    return {Capability::yes(), Capability::yes(), Capability::yes()};
  }
};

struct ShardingPlan {
  std::string name;           // the strategy's, for collective names and errors
  bool shard_grads = false;   // reduce-scatter (else all-reduce into replicated gradients)
  bool shard_params = false;  // parameters partitioned between uses
  bool reshard_after_forward = true;  // with shard_params: free after forward, gather again for backward
  // Partitions cut over groups of ranks, the groups replicas of each other:
  // `shard_group` ranks each (0: the ranks of a node).
  bool hybrid = false;
  int shard_group = 0;
  bool prefetch = true;       // with shard_params: all-gather the next unit while this one computes
  bool overlap = true;        // a unit's gradient reduction runs during the next unit's backward
  std::string reduce_dtype;   // mixed precision: fp32, bf16, fp16; "": the compute dtype
};

// The options every sharded strategy has: prefetch, overlap, reduction dtype.
struct SharedOptions {
  bool prefetch = true;
  bool overlap = true;
  std::string reduce_dtype;
  // Appends their settings (keys reduce, prefetch, overlap).
  void add_settings(std::vector<Setting>& out, bool with_prefetch_help_for_stage3 = false);
  // Checks reduce_dtype against the precision ("" when not known).
  void validate(const std::string& precision) const;
  void apply(ShardingPlan& plan) const;
  // `choice` (whose options include these) as a run records it after set-up
  // resolved `plan`: the reduction dtype actually used; prefetch as given
  // where parameters are partitioned, else at its default (nothing to fetch).
  static Choice resolved(Choice choice, const ShardingPlan& plan);
};

// The engine's static rings (buffers.h): unit i lives in slot i % slots,
// each slot as large as the largest of its units.
// Gather slots: one unit gathered at a time and a prefetched neighbour with
// it under full sharding, every unit where units stay gathered from forward
// to backward (grad-op), none where parameters are replicated.
size_t gather_slots(const ShardingPlan& plan, size_t units);
// Gradient slots: the unit whose backward runs, and with overlap the one
// whose reduction is in flight.
size_t grad_slots(const ShardingPlan& plan, size_t units);
// Elements of each of `slots` slots holding units of `sizes` elements.
std::vector<int64_t> ring_slots(const std::vector<int64_t>& sizes, size_t slots);

// Ranks one copy of the model is partitioned over in a job of `shape`.
int shard_ranks(const ShardingPlan& plan, const Shape& shape);

// The memory model (docs/memory.md) for the plan.
StateBytes plan_state(const ShardingPlan& plan, const MemoryInputs& in);

// One optimizer step of the engine, as it issues it.
void plan_schedule(const ShardingPlan& plan, const StepInputs& in, StepBuilder& b);

// What `report` advises about the engine's exposed communication.
std::string plan_exposed_advice(const ShardingPlan& plan);

}  // namespace hpcbench::strategies::shard
