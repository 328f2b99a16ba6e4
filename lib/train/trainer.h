#pragma once
// The timed training loop shared by every strategy.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "report/run_result.h"
#include "strategies/strategy.h"
#include "train/config.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::train {

// Where this process sits in the job (one process per device).
struct RunContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  std::string hosts;  // all ranks' hosts, rank order
  std::string slurm_job_id;
  // The job's communicator (its device is this rank's device); null for a
  // single process without one. With it, the figures combine every rank.
  std::shared_ptr<dist::Comm> comm;
};

// Files a run may leave besides its results folder, written by rank 0 (tests
// and the PyTorch comparisons read them; empty paths: not written), and a
// call after every optimizer step (the fault-injection test hook).
struct TrainHooks {
  std::filesystem::path initial_checkpoint;  // the weights every rank starts from
  std::filesystem::path final_checkpoint;    // the weights after the last step
  // safetensors: the training features ("input_ids", ...) and each rank's
  // sample order over the steps run ("order_rank<r>", [steps, grad_accum, rows]).
  std::filesystem::path data_dump;
  std::function<void(int64_t step)> after_step;
  // Asked at every step boundary with the steps done so far: true ends the
  // loop there (a stop signal; every rank must answer alike, as
  // dist::StepStop does). The result is then "interrupted", without
  // evaluation, its figures over the steps done.
  std::function<bool(int64_t done)> stop_before;
  std::filesystem::path tensorboard_dir;  // the run's TensorBoard log (lib/tensorboard); empty: none
};

struct TrainOutput {
  report::RunResult result;
  nlohmann::json details;  // configuration, environment, per-step records
  // utilisation.csv (lib/monitor) with every node's samples; empty when
  // sampling was off.
  std::string utilisation_csv;
};

// Builds the model and data from cfg, trains under `strategy`, evaluates
// when eval data is given, and returns the figures. Writes nothing to disk
// (report::write_run_folder does, on rank 0).
TrainOutput train(const TrainConfig& cfg, strategies::Strategy& strategy, const RunContext& ctx,
                  const TrainHooks& hooks = {});

}  // namespace hpcbench::train
