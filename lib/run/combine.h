#pragma once
// Every rank's steps combined into the job's: a step ends when its slowest
// rank ends it, its loss is the mean over the ranks that compute one, and
// each rank's memory and timing are gathered.
#include <string>
#include <vector>

#include "results/steps.h"
#include "run/build.h"
#include "run/loop.h"

namespace hpcbench::run {

struct JobSteps {
  std::vector<results::StepRecord> steps;  // the job's: the slowest rank's time, the mean loss
  int64_t timed_from = 0;                  // steps before it are the timing warm-up
  std::vector<double> rank_median_ms;      // each rank's own median step (empty for one rank)
  std::vector<results::RankTiming> rank_timing;
  // Each rank's model state, the peak its device held (reserved) and the
  // peak of its live tensors (allocated; 0 on CPU).
  std::vector<int64_t> rank_state_bytes, rank_peak_bytes, rank_allocated_bytes;
  double wall_s = 0;
  int64_t steps_planned = 0;
  bool stopped = false;  // a stop signal ended training early
  std::string cuda_graph;   // Steps::cuda_graph
  int64_t short_steps = 0;  // Steps::short_steps
};

// Collective: every rank calls it; every rank gets the job's figures.
JobSteps combine_ranks(const Run& run, const RunContext& ctx, Steps steps);

}  // namespace hpcbench::run
