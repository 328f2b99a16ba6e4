#include "strategies/shard/reduction.h"

#include <ATen/ATen.h>

#include "strategies/shard/gathers.h"

namespace hpcbench::strategies::shard {

void reduce(ShardState& s, Unit& u) {
  complete_reductions(s);
  const int world = s.comm().size();
  at::NoGradGuard no_grad;
  // Every send buffer first, collectives after (as for gathers). Backward
  // accumulated the unit's gradients into its slot of the gradient ring
  // (buffers.h), the padding and the gradients of parameters unused in this
  // forward left at zero: that slot is sent, or a copy of it cast to the
  // reduce dtype, as FSDP2's copy-in casts.
  const size_t first = s.reductions.size();
  for (auto i : u.flats) {
    auto& f = s.flats[i];
    if (!f.send.is_same(f.grads)) f.send.copy_(f.grads);
    // Divided before the sum, as DDP and FSDP do, so that the sum is the
    // mean and fp16 sums do not overflow.
    if (world > 1) f.send.mul_(1.0 / world);
    s.reductions.push_back({i, &u, {}});
  }
  for (size_t k = first; k < s.reductions.size(); ++k) {
    auto& r = s.reductions[k];
    auto& f = s.flats[r.flat];
    r.work = s.plan.shard_grads ? s.shard_comm().reduce_scatter_async(f.part, f.send, r.unit->reduce_what)
                                : s.comm().allreduce_async(f.send, r.unit->reduce_what);
  }
  if (!s.plan.overlap) complete_reductions(s);
  if (s.plan.shard_params) reshard(s, u);
}

void complete_reductions(ShardState& s) {
  if (s.reductions.empty()) return;
  at::NoGradGuard no_grad;
  // Every wait before any arithmetic on the results: the adds and the
  // slot's zeroing would otherwise run while the unit's later collectives
  // are still in flight, hiding part of them that the run's no-overlap
  // setting promises to expose (tests/strategies/test_timing_model.cpp).
  for (auto& r : s.reductions) (s.plan.shard_grads ? s.shard_comm() : s.comm()).wait(r.work);
  for (auto& r : s.reductions) {
    auto& f = s.flats[r.flat];
    if (s.plan.shard_grads) {
      if (s.place.replicas) s.place.replicas->allreduce(f.part, false, r.unit->replicate_what);
      // Accumulated in fp32 over micro-steps, into gradients the updater
      // zeroes after each step.
      f.shard.mutable_grad().add_(f.part);
    } else {
      f.grad_full.add_(f.send);
    }
    // The slot is the next unit's but one: zeroed for its backward, after
    // the collective that read it.
    f.grads.zero_();
  }
  s.reductions.clear();
}

}  // namespace hpcbench::strategies::shard
