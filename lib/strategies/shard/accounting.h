#pragma once
// What a sharded rank holds: its model-state bytes as measured (the
// persistent state and the largest transient set seen so far), and the sizes
// the memory model (plan.h) takes, so that the two can be compared.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// Persistent: what survives between steps (partitions, replicated
// parameters and gradients, Adam's moments). Transient: gathered units of
// partitioned parameters and the full gradients of the unit being reduced.
size_t current_bytes(const ShardState& s, bool transient);
// Remembers the largest transient set so far (called where it may peak).
void note_peak(ShardState& s);
// The peak so far: the optimizer creates its moments in the first step,
// after the first backward, so it is persistent now + the largest transient.
size_t peak_state_bytes(const ShardState& s);

std::vector<int64_t> unit_sizes(const ShardState& s);  // elements per unit, forward order
int64_t parameters(const ShardState& s);
// The memory model's figure for this rank (after set-up).
double theoretical_state_bytes(const ShardState& s);

}  // namespace hpcbench::strategies::shard
