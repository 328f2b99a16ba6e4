#pragma once
// A layout's memory per rank, as `plan` prunes by it: the model state
// predict reports (predict::model_state, the strategy's Spec::memory on the
// baseline's engine, docs/memory.md: what the run's preflight checks and the
// run measures) plus the activations one
// micro-step keeps for backward, an estimate: Korthikanti et al.'s count per
// encoder layer (specs/model_shape.h) for the replica's micro-batch, spread evenly
// over the ranks that hold one replica (tensor and pipeline ranks), or with
// recomputation only each layer's input and one layer's full set.
#include <cstdint>
#include <vector>

#include "plan/space.h"
#include "predict/step_model.h"

namespace hpcbench::plan {

struct MemoryUse {
  double state = 0;        // the spec's formula: persistent + working set
  double activations = 0;  // the estimate above
  double total() const { return state + activations; }
};

struct MemoryInputs {
  const strategies::ModelLayout* layout = nullptr;  // the model's sharding units
  strategies::ModelShape model;
  strategies::Shape shape;
  int64_t seq = 128;
  // The engine's bytes (predict::engine_step_options): an activation and a
  // gathered parameter take compute_bytes (2 under bf16/fp16); with resident
  // weights a replica, a shard or a stage holds 16 bytes a parameter.
  predict::StepOptions options;
};

MemoryUse memory_per_rank(const Candidate& c, const MemoryInputs& in);

}  // namespace hpcbench::plan
