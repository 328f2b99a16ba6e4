#pragma once
// `run --repeats N`: one command line run N times.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "run/job.h"

namespace hpcbench::run {

// Starts one repeat's local ranks from this process (run name, group, index,
// and the flags that say so on the ranks' command line); returns the
// launcher's exit status.
using RanksHere = std::function<int(const std::string& name, const std::string& group, int64_t index,
                                    const std::vector<std::string>& flags)>;

// The timed loop N times in separate processes, one after the other, so that
// each repeat starts with a fresh allocator, caches and thread pools: a child
// `hpcbench run` per repeat, or, with `ranks_here`, the repeat's ranks
// started from this process. Every repeat is its own run folder <group>-r<i>
// with the shared repeat_group. Returns the process's exit status.
int run_repeats(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                const RanksHere& ranks_here = {});

}  // namespace hpcbench::run
