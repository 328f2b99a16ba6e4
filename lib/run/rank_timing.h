#pragma once
// What each rank did over the timed steps, for the efficiency decomposition
// (report/efficiency.h): the job's step is its slowest rank's, so telling
// communication from waiting for that rank needs every rank's own figures.
#include <vector>

#include "results/steps.h"
#include "run/context.h"

namespace hpcbench::run {

// Every rank's means over `timed` (its own steps, not the slowest rank's),
// in rank order. A collective: every rank calls it.
std::vector<results::RankTiming> rank_timing(const std::vector<results::StepTimes>& timed, const RunContext& ctx);

// The injected slow_rank (core/injection.h): the ms `rank` sleeps in each
// step's forward phase, 0 for every other rank or when none is injected.
// Throws UserError naming the variable when its value does not parse.
double test_slow_rank_ms(int rank);

}  // namespace hpcbench::run
