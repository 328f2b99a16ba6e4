#pragma once
// plan.json: what `hpcbench plan` predicted for the layouts its sweep
// verifies, in the sweep folder beside sweep.json, so that `report` can put
// each measured run beside its prediction and say whether the ranking held.
//
// {
//   "schema": "hpcbench-plan/1",
//   "baseline_source": "<run folder or file[:row]>", "system": "<file>",
//   "nodes": 4, "gpus_per_node": 8, "global_batch": 256,
//   "calibration": {"low": -0.043, "high": -0.008, "source": "..."},
//   "baseline_noise": 0.01, "tie_threshold": 0.055,
//   "searched": 1200, "predicted": 800,
//   "layouts": [{"job": "<sweep job name = run id>", "strategy": "<label>", "recompute": false,
//                "rank": 1, "tie_group": 1, "step_ms": 10.0, "step_ms_low": 10.1, "step_ms_high": 10.5,
//                "samples_per_s": 25600, "memory_bytes": 1.0e9}]
// }
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hpcbench::results {

inline constexpr const char* kPlanSchema = "hpcbench-plan/1";

struct PlannedLayout {
  std::string job, strategy;
  bool recompute = false;
  int rank = 0, tie_group = 0;
  double step_ms = 0, step_ms_low = 0, step_ms_high = 0;
  double samples_per_s = 0, memory_bytes = 0;
};

struct PlanFile {
  std::string baseline, system;
  int nodes = 1, gpus_per_node = 1;
  int64_t global_batch = 0;
  double calibration_low = 0, calibration_high = 0;
  std::string calibration_source;
  double baseline_noise = 0, tie_threshold = 0;
  int64_t searched = 0, predicted = 0;
  std::vector<PlannedLayout> layouts;  // predicted rank order
};

std::string plan_json(const PlanFile& plan);
void write_plan_file(const std::filesystem::path& file, const PlanFile& plan);
// Throws UserError naming the file when it is not a plan of this schema.
PlanFile read_plan_file(const std::filesystem::path& file);

}  // namespace hpcbench::results
