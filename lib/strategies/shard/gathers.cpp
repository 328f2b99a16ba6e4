#include "strategies/shard/gathers.h"

#include <ATen/ATen.h>

#include "strategies/shard/buffers.h"

namespace hpcbench::strategies::shard {

at::Tensor gather_input(const ShardState& s, const FlatParam& f) {
  // This rank's chunk of the gather's own output, gathered in place (as
  // FSDP2's all-gather does): a partition that is a view of it is there
  // already; one with memory of its own (or in fp32 under mixed precision)
  // is copied in, cast on the way.
  return write_back(f, s.shard_comm().rank());
}

void start_gather(ShardState& s, Unit& u) {
  if (u.gathered || !u.inflight.empty()) return;
  check_slot_free(s, u);
  at::NoGradGuard no_grad;
  // Inputs first, collectives after: nothing computes between a unit's
  // all-gathers and the wait that may follow them. Written behind
  // autograd's back: the parameters' version counters are their own
  // (set_data), so tensors saved for backward stay valid.
  std::vector<at::Tensor> inputs;
  for (auto i : u.flats) inputs.push_back(gather_input(s, s.flats[i]));
  for (size_t k = 0; k < u.flats.size(); ++k)
    u.inflight.push_back(s.shard_comm().allgather_async(s.flats[u.flats[k]].full, inputs[k], u.gather_what));
}

void finish_gather(ShardState& s, Unit& u) {
  if (u.gathered || u.inflight.empty()) return;
  for (auto& w : u.inflight) s.shard_comm().wait(w);
  u.inflight.clear();
  u.gathered = true;
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
  finish_gather(s, u);  // never hand on a slot a collective is writing
  u.gathered = false;   // its slot is the next unit's (nothing is freed)
}

void unshard_model(ShardState& s) {
  // Replicated fp32 parameters are the model already.
  if (!s.mixed && !s.plan.shard_params) return;
  // Otherwise every parameter whole at once, which the gather ring cannot
  // hold: the fp32 masters gathered into memory of their own (what
  // checkpoints and evaluation must see), outside the step. The next
  // forward_backward points the parameters back at the compute buffers,
  // which are left as they were.
  at::NoGradGuard no_grad;
  for (auto& u : s.units) reshard(s, u);
  for (auto& f : s.flats) {
    auto master = at::empty({f.shard_numel * s.shard_comm().size()}, f.shard.options());
    s.shard_comm().allgather(master, f.shard.detach().clone());
    view_whole(f, master);
  }
  s.master_views = true;
}

}  // namespace hpcbench::strategies::shard
