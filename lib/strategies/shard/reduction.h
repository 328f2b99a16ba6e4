#pragma once
// Gradient reduction, unit by unit during backward: when a unit's last
// gradient is ready its gradients (accumulated by backward in the unit's
// slot of the gradient ring, buffers.h; cast into a send buffer beside it
// when the reduce dtype differs) are reduced into this rank's partition
// (reduce-scatter) or into replicated gradients (all-reduce), then averaged
// over the partition's replicas in other groups. With overlap a reduction
// runs while backward computes the next unit; at most one unit's is in
// flight, as FSDP limits it, and each is accumulated in fp32 over
// micro-steps.
#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// Starts reducing unit `u`'s gradients (finishing the one in flight first)
// and hands on its gather slot where parameters are partitioned.
void reduce(ShardState& s, Unit& u);
// Waits for the reductions in flight, accumulates them and zeroes their
// gradient slots.
void complete_reductions(ShardState& s);

}  // namespace hpcbench::strategies::shard
