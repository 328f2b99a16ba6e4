#pragma once
// A layout's memory per rank, as `plan` prunes by it: the model state the
// strategy's spec counts (Spec::memory, docs/memory.md: what the run's
// preflight checks and the run measures) plus the activations one
// micro-step keeps for backward, an estimate: Korthikanti et al.'s count per
// encoder layer (specs/model_shape.h) for the replica's micro-batch, spread evenly
// over the ranks that hold one replica (tensor and pipeline ranks), or with
// recomputation only each layer's input and one layer's full set.
#include <cstdint>
#include <vector>

#include "plan/space.h"

namespace hpcbench::plan {

struct MemoryUse {
  double state = 0;        // the spec's formula: persistent + working set
  double activations = 0;  // the estimate above
  double total() const { return state + activations; }
};

struct MemoryInputs {
  std::vector<int64_t> units;  // the model's sharding units (ModelLayout::unit_numel)
  strategies::ModelShape model;
  strategies::Shape shape;
  int64_t seq = 128;
  int compute_bytes = 4;  // bytes an activation and a gathered parameter take: 2 under bf16/fp16
};

MemoryUse memory_per_rank(const Candidate& c, const MemoryInputs& in);

}  // namespace hpcbench::plan
