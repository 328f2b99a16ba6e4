#include "strategies/shard/buffers.h"

#include <ATen/ATen.h>
#include <c10/util/strides.h>

#include "core/error.h"

namespace hpcbench::strategies::shard {

namespace {

// Elements of each unit when laid out flat by flat (`per_flat` elements of
// flat f each).
template <typename F>
std::vector<int64_t> unit_elements(const ShardState& s, F per_flat) {
  std::vector<int64_t> out;
  for (auto& u : s.units) {
    int64_t n = 0;
    for (auto i : u.flats) n += per_flat(s.flats[i]);
    out.push_back(n);
  }
  return out;
}

std::vector<at::Tensor> make_ring(const std::vector<int64_t>& slots, const at::TensorOptions& options) {
  std::vector<at::Tensor> ring;
  for (auto n : slots) ring.push_back(at::zeros({n}, options));
  return ring;
}

// Unit by unit, each flat parameter's view of its unit's slot in `ring`.
template <typename F, typename Set>
void lay_out(ShardState& s, const std::vector<at::Tensor>& ring, size_t Unit::*slot, F per_flat, Set set) {
  for (auto& u : s.units) {
    int64_t offset = 0;
    for (auto i : u.flats) {
      auto& f = s.flats[i];
      const int64_t n = per_flat(f);
      set(f, ring[u.*slot].narrow(0, offset, n));
      offset += n;
    }
  }
}

// `sizes` elements of `flat` from `offset`, sharing its memory without being
// an autograd view: gradients that are views are refused by the optimizer's
// zero_grad (it detaches them in place), as ddp's bucket views are made.
at::Tensor alias(const at::Tensor& flat, int64_t offset, at::IntArrayRef sizes) {
  auto t = at::empty({0}, flat.options());
  t.set_(flat.storage(), flat.storage_offset() + offset, sizes, c10::contiguous_strides(sizes));
  return t;
}

}  // namespace

void make_buffers(ShardState& s) {
  at::NoGradGuard no_grad;
  const int parts = s.shard_comm().size();
  const auto compute = s.flats.front().shard.options().dtype(s.compute_dtype);
  auto full_numel = [&](const FlatParam& f) { return f.shard_numel * parts; };
  auto shard_numel = [](const FlatParam& f) { return f.shard_numel; };
  const auto sizes = unit_elements(s, full_numel);

  const size_t gathers = gather_slots(s.plan, s.units.size()), grads = grad_slots(s.plan, s.units.size());
  for (size_t u = 0; u < s.units.size(); ++u) {
    s.units[u].gather_slot = gathers > 0 ? u % gathers : 0;
    s.units[u].grad_slot = u % grads;
  }
  if (gathers > 0) {
    s.gather_ring = make_ring(ring_slots(sizes, gathers), compute);
    lay_out(s, s.gather_ring, &Unit::gather_slot, full_numel, [](FlatParam& f, at::Tensor v) { f.full = v; });
  }
  s.grad_ring = make_ring(ring_slots(sizes, grads), compute);
  lay_out(s, s.grad_ring, &Unit::grad_slot, full_numel, [](FlatParam& f, at::Tensor v) { f.grads = v; });
  if (s.reduce_dtype != s.compute_dtype) {
    s.send_ring = make_ring(ring_slots(sizes, grads), compute.dtype(s.reduce_dtype));
    lay_out(s, s.send_ring, &Unit::grad_slot, full_numel, [](FlatParam& f, at::Tensor v) { f.send = v; });
  }
  if (s.plan.shard_grads) {
    s.part_ring = make_ring(ring_slots(unit_elements(s, shard_numel), grads), compute.dtype(s.reduce_dtype));
    lay_out(s, s.part_ring, &Unit::grad_slot, shard_numel, [](FlatParam& f, at::Tensor v) { f.part = v; });
  }

  for (auto& f : s.flats) {
    if (!f.send.defined()) f.send = f.grads;
    // The parameters' gradients: backward accumulates into these views (as
    // DDP's gradient_as_bucket_view), so it allocates none of its own.
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].mutable_grad() = alias(f.grads, f.offsets[k], f.params[k].sizes());
    // The fp32 gradients the optimizer steps.
    if (s.plan.shard_grads) {
      f.shard.mutable_grad() = at::zeros_like(f.shard);
    } else {
      f.grad_full = at::zeros({full_numel(f)}, f.shard.options());
      f.shard.mutable_grad() = alias(f.grad_full, s.shard_comm().rank() * f.shard_numel, {f.shard_numel});
    }
  }
}

void check_slot_free(const ShardState& s, const Unit& u) {
  for (auto& v : s.units)
    if (&v != &u && v.gather_slot == u.gather_slot && (v.gathered || !v.inflight.empty()))
      fail("{}: internal error: {} would be gathered into the slot {} still holds", s.plan.name, u.name, v.name);
}

}  // namespace hpcbench::strategies::shard
