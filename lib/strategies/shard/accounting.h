#pragma once
// What a sharded rank holds: its model-state bytes as measured, and the
// sizes the memory model (plan.h) takes, so that the two can be compared.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// What the rank holds: its partitions (and the replicated parameters where
// they are), the fp32 gradients, Adam's states and the static rings
// (buffers.h), each storage once. Nothing else survives a step, and the
// rings are the whole working set: the figure is the same after every step
// from the first on (when the optimizer creates its moments).
size_t state_bytes(const ShardState& s);

std::vector<int64_t> unit_sizes(const ShardState& s);  // elements per unit, forward order
int64_t parameters(const ShardState& s);
// The memory model's figure for this rank (after set-up).
double theoretical_state_bytes(const ShardState& s);

}  // namespace hpcbench::strategies::shard
