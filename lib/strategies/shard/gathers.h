#pragma once
// The unit schedule of partitioned parameters: a unit is gathered into its
// slot of the gather ring (buffers.h) before it computes (the next one
// prefetched while it does), hands the slot on after its forward or its
// backward, and the model is gathered whole on demand (checkpoints,
// evaluation).
#include <ATen/core/Tensor.h>

#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// What a gather sends: this rank's partition in the compute dtype, in its
// place in the gather's output (copied there unless it is a view of it).
at::Tensor gather_input(const ShardState& s, const FlatParam& f);
void start_gather(ShardState& s, Unit& u);  // issues the unit's all-gathers (no wait)
void finish_gather(ShardState& s, Unit& u);  // waits for them (if issued)
void gather(ShardState& s, Unit& u);         // both
// Starts unit `unit`'s gather when prefetching (and there is such a unit).
void prefetch(ShardState& s, size_t unit);
// Marks a unit of partitioned parameters no longer gathered (after its
// gather ended), handing its slot on.
void reshard(ShardState& s, Unit& u);
// Every parameter whole in the model: the fp32 masters under mixed
// precision (what checkpoints and evaluation must see), the compute copies
// otherwise; the next training step goes back to its own.
void unshard_model(ShardState& s);

}  // namespace hpcbench::strategies::shard
