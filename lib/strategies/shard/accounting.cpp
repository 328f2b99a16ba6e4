#include "strategies/shard/accounting.h"

#include <torch/optim/adamw.h>

#include <algorithm>

namespace hpcbench::strategies::shard {

size_t state_bytes(const ShardState& s) {
  size_t bytes = 0;
  for (auto& f : s.flats) {
    if (!s.plan.shard_params) bytes += storage_bytes(f.full);  // else a view of the gather ring
    if (!f.shard_is_view) bytes += storage_bytes(f.shard);
    // The fp32 gradients: replicated, or of the partition.
    bytes += f.grad_full.defined() ? storage_bytes(f.grad_full) : storage_bytes(f.shard.grad());
  }
  for (const auto* ring : {&s.gather_ring, &s.grad_ring, &s.send_ring, &s.part_ring})
    for (auto& slot : *ring) bytes += storage_bytes(slot);
  if (s.optimizer)
    for (const auto& [key, state] : s.optimizer->state())
      if (auto* a = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
        bytes += a->exp_avg().nbytes() + a->exp_avg_sq().nbytes();
  return bytes;
}

std::vector<int64_t> unit_sizes(const ShardState& s) {
  std::vector<int64_t> sizes;
  for (auto& u : s.units) {
    int64_t n = 0;
    for (auto i : u.flats) n += s.flats[i].numel;
    sizes.push_back(n);
  }
  return sizes;
}

int64_t parameters(const ShardState& s) {
  int64_t n = 0;
  for (auto& f : s.flats) n += f.numel;
  return n;
}

double theoretical_state_bytes(const ShardState& s) {
  MemoryInputs in;
  in.units = unit_sizes(s);
  in.shape = {1, s.ctx.comm ? s.ctx.comm->size() : 1};
  in.compute_bytes = static_cast<int>(c10::elementSize(s.compute_dtype));
  in.reduce_bytes = static_cast<int>(c10::elementSize(s.reduce_dtype));
  return plan_state(s.plan, in).total();
}

}  // namespace hpcbench::strategies::shard
