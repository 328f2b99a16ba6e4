#pragma once
// One training run under one strategy, read top to bottom (trainer.cpp):
// build what it is made of (build.h), run the timed steps (loop.h), make the
// job's figures of every rank's (summary.h), evaluate (evaluate.h).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "results/run_record.h"
#include "results/steps.h"
#include "run/context.h"
#include "specs/spec.h"
#include "train/batch.h"
#include "train/config.h"

namespace hpcbench::run {

// Where every step's samples came from: the features and, per step, the
// epoch and first micro-batch its rows were cut from, with what the order
// of an epoch depends on (train/setup.h's epoch_indices).
struct SampleOrder {
  const train::FeatureTensors* data = nullptr;
  int64_t seed = 0;
  int data_ranks = 1;
  int64_t micro_rows = 0;
  int64_t grad_accum = 1;
  std::vector<std::pair<int64_t, int64_t>> step_origin;  // (epoch, first micro-batch)
};

// Files a run may leave besides its results folder, written by rank 0 (tests
// and the PyTorch comparisons read them; empty paths: not written), and
// calls the tests supply.
struct TrainHooks {
  std::filesystem::path initial_checkpoint;  // the weights every rank starts from
  std::filesystem::path final_checkpoint;    // the weights after the last step
  std::filesystem::path tensorboard_dir;     // the run's TensorBoard log (lib/tensorboard); empty: none
  std::function<void(int64_t step)> after_step;  // after every optimizer step (fault injection)
  // Asked at every step boundary with the steps done so far: true ends the
  // loop there (a stop signal; every rank must answer alike, as
  // dist::StepStop does). The result is then "interrupted", without
  // evaluation, its figures over the steps done.
  std::function<bool(int64_t done)> stop_before;
  // Each micro-batch as the step hands it to the strategy (1-based step,
  // 0-based micro-step), before the step runs: the tests see which rows a
  // step trained on. It reads the batch, so on a GPU it synchronises.
  std::function<void(int64_t step, int64_t micro, const train::Batch&)> batch_seen;
  std::function<void(const SampleOrder&)> after_training;  // rank 0, after the last step (the data dump)
};

struct TrainOutput {
  results::RunResult result;
  std::vector<results::StepRecord> steps;
  std::vector<results::RankTiming> rank_timing;  // each rank's means over the timed steps
  nlohmann::json details;  // configuration, environment, the sampler's summaries, evaluation
  // utilisation.csv (lib/monitor) with every node's samples; empty when
  // sampling was off.
  std::string utilisation_csv;
  std::map<std::string, std::string> files;  // further files for the results folder (--profile's)
};

// Trains under `choice` (the strategy and its options), evaluates when eval
// data is given, and returns the figures. Writes nothing to disk but the
// hooks' files (results::write_run_folder writes the run folder, on rank 0).
TrainOutput train(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx,
                  const TrainHooks& hooks = {});

}  // namespace hpcbench::run
