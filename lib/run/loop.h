#pragma once
// The timed loop: optimizer step after optimizer step, each its
// micro-batches' forward and backward under the strategy, the gradients
// finished, clipped and stepped by the strategy's updater, timed by one step
// timer that every collective reports to.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "monitor/job_sampling.h"
#include "results/steps.h"
#include "run/build.h"
#include "run/step_profile.h"
#include "train/gemm_tuning.h"
#include "run/trainer.h"
#include "tensorboard/run_log.h"

namespace hpcbench::run {

struct Steps {
  std::vector<results::StepRecord> records;  // this rank's own
  std::vector<std::pair<int64_t, int64_t>> origin;  // each step's (epoch, first micro-batch)
  size_t state_bytes = 0;  // model-state bytes right after the first update (where they peak)
  double wall_s = 0;       // the whole loop, warm-up included
  bool stopped = false;    // TrainHooks::stop_before ended the loop early
  // --cuda-graph: "captured", or "not captured: <why>" ("" without it), and
  // the steps that ran outside the graph because a micro-batch was short.
  std::string cuda_graph;
  int64_t short_steps = 0;
  Profile profile;  // --profile's trace and table (rank 0)
  train::GemmTuningRecord tunableop;  // --tunableop's choices (this rank's)
};

// What the loop reports to as it goes, besides the steps it returns.
struct LoopObservers {
  const TrainHooks& hooks;
  monitor::JobSampling& sampling;
  tensorboard::RunLog& tb;
};

// The run's optimizer steps on this rank, as run.cfg and run.batch say.
Steps train_steps(Run& run, const RunContext& ctx, const LoopObservers& obs);

}  // namespace hpcbench::run
