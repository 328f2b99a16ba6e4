#include "strategies/shard/accounting.h"

#include <torch/optim/adamw.h>

#include <algorithm>

namespace hpcbench::strategies::shard {

size_t current_bytes(const ShardState& s, bool transient) {
  size_t bytes = 0;
  for (auto& f : s.flats) {
    if (s.plan.shard_params == transient) bytes += storage_bytes(f.full);
    if (transient) continue;
    if (!f.shard_is_view) bytes += storage_bytes(f.shard);
    bytes += storage_bytes(f.grad_full);
    if (f.shard.grad().defined() && !f.grad_full.defined()) bytes += f.shard.grad().nbytes();
  }
  if (transient) {
    for (auto& p : s.params)
      if (p.grad().defined()) bytes += p.grad().nbytes();
    for (auto& r : s.reductions) bytes += storage_bytes(r.send) + storage_bytes(r.part);
    return bytes;
  }
  if (s.optimizer)
    for (const auto& [key, state] : s.optimizer->state())
      if (auto* a = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
        bytes += a->exp_avg().nbytes() + a->exp_avg_sq().nbytes();
  return bytes;
}

void note_peak(ShardState& s) { s.peak_transient = std::max(s.peak_transient, current_bytes(s, true)); }

size_t peak_state_bytes(const ShardState& s) { return current_bytes(s, false) + s.peak_transient; }

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
