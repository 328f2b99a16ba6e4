#include "strategies/shard/gathers.h"

#include <ATen/ATen.h>

#include "strategies/shard/accounting.h"

namespace hpcbench::strategies::shard {

at::Tensor gather_input(const ShardState& s, const FlatParam& f) {
  if (s.mixed) return f.shard.detach().to(s.compute_dtype);
  // A partition that is a view of the gather's output must be copied first;
  // one with memory of its own is sent as it is.
  return f.shard_is_view ? f.shard.detach().clone() : f.shard.detach();
}

void start_gather(ShardState& s, Unit& u) {
  if (u.gathered || !u.inflight.empty()) return;
  at::NoGradGuard no_grad;
  // Inputs first, collectives after: nothing computes between a unit's
  // all-gathers and the wait that may follow them.
  for (auto i : u.flats) {
    alloc_storage(s.flats[i].full);
    // Written behind autograd's back: the parameters' version counters are
    // their own (set_data), so tensors saved for backward stay valid.
    u.inflight_inputs.push_back(gather_input(s, s.flats[i]));
  }
  for (size_t k = 0; k < u.flats.size(); ++k)
    u.inflight.push_back(s.shard_comm().allgather_async(s.flats[u.flats[k]].full, u.inflight_inputs[k], u.gather_what));
}

void finish_gather(ShardState& s, Unit& u) {
  if (u.gathered) return;
  for (auto& w : u.inflight) s.shard_comm().wait(w);
  u.inflight.clear();
  u.inflight_inputs.clear();
  u.gathered = true;
  note_peak(s);
}

void gather(ShardState& s, Unit& u) {
  if (u.gathered) return;
  start_gather(s, u);
  finish_gather(s, u);
}

void prefetch(ShardState& s, size_t unit) {
  if (s.plan.prefetch && unit < s.units.size()) start_gather(s, s.units[unit]);
}

void reshard(ShardState& s, Unit& u) {
  if (!s.plan.shard_params) return;
  finish_gather(s, u);  // never free a buffer a collective is writing
  if (!u.gathered) return;
  for (auto i : u.flats) free_storage(s.flats[i].full);
  u.gathered = false;
}

void unshard_model(ShardState& s) {
  if (!s.mixed) {
    for (auto& u : s.units) gather(s, u);
    s.resharded = s.plan.shard_params;
    return;
  }
  // Checkpoints and evaluation see the fp32 masters, not their bf16/fp16
  // copies; the next forward_backward goes back to the compute copies.
  at::NoGradGuard no_grad;
  for (auto& u : s.units) finish_gather(s, u);
  for (auto& f : s.flats) {
    auto master = at::empty({f.shard_numel * s.shard_comm().size()}, f.shard.options());
    s.shard_comm().allgather(master, f.shard.detach().clone());
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].set_data(master.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()));
  }
  s.master_views = true;
}

}  // namespace hpcbench::strategies::shard
