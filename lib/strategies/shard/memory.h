#pragma once
// Model-state memory per rank (parameters, gradients, Adam's two moments; all
// fp32, 4 bytes each) as the ZeRO paper counts it, plus the working set the
// sharded strategies hold transiently.
#include <cstdint>
#include <string>

namespace hpcbench::strategies::shard {

// psi: parameters; n: ranks sharding them; largest_unit: elements of the
// largest unit (embeddings, a layer, the head).
//   ddp / baseline:   16 psi
//   zero 1:           8 psi + 8 psi/n   + 4 U (a unit's gradients before its all-reduce)
//   zero 2:           4 psi + 12 psi/n  + 4 U (a unit's gradients before its reduce-scatter)
//   zero 3, fsdp full: 16 psi/n         + 8 U (a gathered unit and its full gradients)
//   fsdp grad-op:     4 psi + 16 psi/n  + 4 U (every unit stays gathered from forward to its backward)
// `strategy`: "ddp", "baseline", "zero" (with stage) or "fsdp" (with sharding
// "full" or "grad-op"). Throws UserError for anything else.
double theoretical_model_state_bytes(const std::string& strategy, int stage, const std::string& sharding,
                                     double psi, int n, double largest_unit);

}  // namespace hpcbench::strategies::shard
