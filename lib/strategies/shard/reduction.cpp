#include "strategies/shard/reduction.h"

#include <ATen/ATen.h>

#include "strategies/shard/accounting.h"
#include "strategies/shard/gathers.h"

namespace hpcbench::strategies::shard {

void reduce(ShardState& s, Unit& u) {
  note_peak(s);
  complete_reductions(s);
  const int world = s.comm().size(), parts = s.shard_comm().size();
  at::NoGradGuard no_grad;
  // Every send buffer first, collectives after (as for gathers).
  const size_t first = s.reductions.size();
  for (auto i : u.flats) {
    auto& f = s.flats[i];
    Reduction r;
    r.flat = i;
    r.unit = &u;
    const int64_t padded = f.shard_numel * parts;
    // The unit's gradients into the send buffer (cast to the reduce dtype on
    // the way) by one cat, as FSDP2's copy-in does, instead of a copy per
    // parameter; only the padding is zeroed. A parameter without a gradient
    // (unused in this forward) takes part as zeros, copied one by one.
    std::vector<at::Tensor> grads;
    for (auto& p : f.params) {
      if (!p.grad().defined()) break;
      grads.push_back(p.grad().reshape({-1}));
    }
    if (grads.size() == f.params.size()) {
      r.send = at::empty({padded}, f.full.options().dtype(s.reduce_dtype));
      auto used = f.numel == padded ? r.send : r.send.narrow(0, 0, f.numel);
      at::cat_out(used, grads);
      if (f.numel < padded) r.send.narrow(0, f.numel, padded - f.numel).zero_();
    } else {
      r.send = at::zeros({padded}, f.full.options().dtype(s.reduce_dtype));
      for (size_t k = 0; k < f.params.size(); ++k) {
        auto& p = f.params[k];
        if (p.grad().defined()) r.send.narrow(0, f.offsets[k], p.numel()).view(p.sizes()).copy_(p.grad());
      }
    }
    grads.clear();
    for (auto& p : f.params) p.mutable_grad() = at::Tensor();
    // Divided before the sum, as DDP and FSDP do, so that the sum is the
    // mean and fp16 sums do not overflow.
    if (world > 1) r.send.mul_(1.0 / world);
    if (s.plan.shard_grads) r.part = at::empty({f.shard_numel}, r.send.options());
    s.reductions.push_back(std::move(r));
  }
  for (size_t k = first; k < s.reductions.size(); ++k) {
    auto& r = s.reductions[k];
    r.work = s.plan.shard_grads ? s.shard_comm().reduce_scatter_async(r.part, r.send, r.unit->reduce_what)
                                : s.comm().allreduce_async(r.send, r.unit->reduce_what);
  }
  if (!s.plan.overlap) complete_reductions(s);
  if (s.plan.shard_params) reshard(s, u);
}

void complete_reductions(ShardState& s) {
  if (s.reductions.empty()) return;
  at::NoGradGuard no_grad;
  for (auto& r : s.reductions) {
    auto& f = s.flats[r.flat];
    (s.plan.shard_grads ? s.shard_comm() : s.comm()).wait(r.work);
    if (s.plan.shard_grads) {
      if (s.place.replicas) s.place.replicas->allreduce(r.part, false, r.unit->replicate_what);
      if (f.shard.grad().defined()) f.shard.mutable_grad().add_(r.part);
      else f.shard.mutable_grad() = r.part.to(at::kFloat);
    } else {
      if (!f.grad_full.defined()) f.grad_full = at::zeros(r.send.sizes(), r.send.options().dtype(at::kFloat));
      if (!f.shard.grad().defined()) {
        f.grad_full.zero_();
        // Shares grad_full's memory without being an autograd view: the
        // optimizer's zero_grad detaches gradients in place, which views refuse.
        auto g = at::empty({0}, f.grad_full.options());
        g.set_(f.grad_full.storage(), s.comm().rank() * f.shard_numel, {f.shard_numel}, {1});
        f.shard.mutable_grad() = g;
      }
      f.grad_full.add_(r.send);
    }
  }
  // Dropped only now, after their waits (flat_param.cpp's free_storage).
  s.reductions.clear();
}

}  // namespace hpcbench::strategies::shard
