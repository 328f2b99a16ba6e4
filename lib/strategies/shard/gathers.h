#pragma once
// The unit schedule of partitioned parameters: a unit is gathered before it
// computes (the next one prefetched while it does), freed again after its
// forward or its backward, and gathered whole on demand (checkpoints,
// evaluation).
#include <ATen/core/Tensor.h>

#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// What a gather sends: this rank's partition in the compute dtype (a copy
// when it is a view of the gather's output).
at::Tensor gather_input(const ShardState& s, const FlatParam& f);
void start_gather(ShardState& s, Unit& u);  // issues the unit's all-gathers (no wait)
void finish_gather(ShardState& s, Unit& u);  // waits for them
void gather(ShardState& s, Unit& u);         // both
// Starts unit `unit`'s gather when prefetching (and there is such a unit).
void prefetch(ShardState& s, size_t unit);
// Frees a gathered unit of partitioned parameters (after its gather ended).
void reshard(ShardState& s, Unit& u);
// Every parameter whole in the model: the fp32 masters under mixed
// precision (what checkpoints and evaluation must see), the compute copies
// otherwise; the next training step goes back to its own.
void unshard_model(ShardState& s);

}  // namespace hpcbench::strategies::shard
