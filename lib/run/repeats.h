#pragma once
// `run --repeats N`: one command line run N times.
#include "run/job.h"

namespace hpcbench::run {

// The timed loop N times as separate processes, one after the other, so that
// each repeat starts with a fresh allocator, caches and thread pools; every
// repeat is its own run folder <group>-r<i> with the shared repeat_group.
// Returns the process's exit status.
int run_repeats(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o);

}  // namespace hpcbench::run
