#pragma once
// What the report says about runs whose figures need a word before anyone
// divides by them: runs a stop signal interrupted, and runs whose ranks
// shared their cores.
#include <string>
#include <vector>

#include "results/run_reader.h"

namespace hpcbench::report {

// Runs with status "interrupted" (a time limit, scancel or Ctrl-C ended
// them early; their figures are over the steps they did). Without
// `include` they stay rows of their own, with no speedup or efficiency;
// with it they count as finished runs. Returns the note to print ("" when
// there are none).
std::string interrupted_runs(std::vector<results::LoadedRun>& runs, bool include);

// A note per run whose ranks per node x intra-op threads exceeded the
// CPUs its node gave it (results' cpu_cores, threads_per_rank).
std::vector<std::string> oversubscribed_runs(const std::vector<results::LoadedRun>& runs);

}  // namespace hpcbench::report
