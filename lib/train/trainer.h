#pragma once
// The timed training loop shared by every strategy.
#include <nlohmann/json.hpp>

#include <string>

#include "report/run_result.h"
#include "strategies/strategy.h"
#include "train/config.h"

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
};

struct TrainOutput {
  report::RunResult result;
  nlohmann::json details;  // configuration, environment, per-step records
};

// Builds the model and data from cfg, trains under `strategy`, evaluates
// when eval data is given, and returns the figures. Writes nothing to disk
// (report::write_run_folder does, on rank 0).
TrainOutput train(const TrainConfig& cfg, strategies::Strategy& strategy, const RunContext& ctx);

}  // namespace hpcbench::train
