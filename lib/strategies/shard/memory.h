#pragma once
// Model-state memory per rank (parameters, gradients, Adam's two moments) as
// the ZeRO paper counts it, plus the working set the sharded strategies hold
// transiently: gathered units and a unit's full gradients. The formulas are
// written out, with their derivation, in docs/memory.md.
#include <cstdint>
#include <string>
#include <vector>

namespace hpcbench::strategies::shard {

struct MemoryPlan {
  std::string strategy;    // "ddp", "baseline", "dp", "zero" or "fsdp"
  int stage = 0;           // zero: 1, 2, 3
  std::string sharding;    // fsdp: "full", "grad-op", "hybrid"
  int ranks = 1;           // ranks one copy is partitioned over (N; hybrid: the shard group)
  std::vector<int64_t> units;  // elements of each unit in forward order (embeddings, layers, head)
  int compute_bytes = 4;   // bytes of a gathered parameter / unit gradient: 4 (fp32) or 2 (bf16, fp16)
  bool prefetch = false;   // zero 3 / fsdp: the next unit's gather is in flight during this one's compute
  bool overlap = false;    // a unit's gradient reduction is in flight during the next unit's backward
  int reduce_bytes = 4;    // bytes of a gradient element in the reduction
};

struct StateBytes {
  double persistent = 0;   // partitions, replicated parameters and gradients, Adam's moments
  double working_set = 0;  // the largest transient set
  double total() const { return persistent + working_set; }
};

// With Ψ parameters, N ranks, c compute bytes, u_i the units:
//   baseline / dp:  16Ψ (fp32 weights under autocast too; dp: on its first
//                   device, the replicas hold parameters and gradients on theirs)
//   ddp:            16Ψ: the gradients are the buckets' views (DDP's
//                   gradient_as_bucket_view), so the all-reduce buffers are
//                   not a second copy of them (20Ψ if they were)
//   zero 1:   cΨ + 4Ψ + (8 + m)Ψ/N  + c·max u
//   zero 2:   cΨ + (12 + m)Ψ/N      + c·max u
//   zero 3, fsdp full, fsdp hybrid:
//             16Ψ/N + max_i c·(2u_i + p·u_{i-1})   (forward: c·(u_i + p·u_{i+1}))
//   fsdp grad-op:
//             16Ψ/N + max_i c·(u_0 + … + u_i + u_i)
// where m = 4 under mixed precision (the fp32 master partition is a copy,
// not a view of the replicated parameters) and 0 in fp32, and p = 1 with
// prefetch. With overlap, the reduction of the unit after u_i (backward
// reduces it first) is still in flight: + r·u_(i+1)·(1 + 1/N) for a
// reduce-scatter (its input and this rank's part), + r·u_(i+1) for zero 1's
// all-reduce, r the reduce dtype's bytes. Throws UserError for an unknown
// strategy.
StateBytes theoretical_state(const MemoryPlan& plan);

// The replicating strategies' figure for a model of `parameters` elements.
double replicated_state_bytes(const std::string& strategy, int64_t parameters);

}  // namespace hpcbench::strategies::shard
