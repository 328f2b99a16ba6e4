#pragma once
// The engine's static storage, made once at set-up and reused by every step,
// so that a step allocates and frees nothing it keeps (what a CUDA graph's
// replay needs, and what keeps the eager step's host work flat):
// - a ring of gather slots that partitioned units' parameters view into
//   (plan.h's gather_slots: a unit and its prefetched neighbour, or every
//   unit under grad-op), all-gathered in place;
// - a ring of gradient slots that the parameters' .grad view into, so that
//   backward accumulates in place; a unit's gradients are sent from there
//   (or from a reduce-dtype copy beside it) and zeroed once reduced;
// - for a reduce-scatter, this rank's part beside each gradient slot;
// - the fp32 gradients the optimizer steps, zeroed (never dropped) after
//   each step.
// A unit always lives in the same slots (unit i in slot i % slots), so the
// addresses a capture records stay those of every later step.
#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// Makes the rings and points every flat parameter's full buffer (where
// partitioned), gradients, send and part buffers into them.
void make_buffers(ShardState& s);

// Throws an internal error when unit `u`'s gather slot still holds another
// gathered unit (the schedule would overwrite parameters in use).
void check_slot_free(const ShardState& s, const Unit& u);

}  // namespace hpcbench::strategies::shard
