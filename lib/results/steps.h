#pragma once
// A run's steps as its files keep them: each optimizer step's record (the
// "steps" array of run.json, and loss.csv), and each rank's means over the
// timed steps (run.json's "rank_timing_ms"), with their one writer and
// reader each. The phases a step is split into are named here, where the
// column names come from.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hpcbench::results {

// GradSync: from the end of backward until the gradients are final (the
// strategy's last waits, dp's reduction). Its time is not comm_ms.
enum class Phase { Data = 0, Forward, Backward, GradSync, Optimizer, Count };
inline constexpr size_t kPhases = static_cast<size_t>(Phase::Count);
// "data", "forward", "backward", "grad_sync", "optimizer": the columns'
// stems ("<phase>_ms", "<phase>_exposed_ms").
const char* phase_name(Phase p);

// One step's times (lib/train/step_timer.h says how they are measured).
struct StepTimes {
  double ms = 0;
  std::array<double, kPhases> phase_ms{};
  double comm_ms = 0;
  double comm_exposed_ms = 0;
  // comm_exposed_ms split by the phase it fell in (they add up to
  // comm_exposed_ms), so that a phase's own work is its time minus its
  // exposed part (report/efficiency.h).
  std::array<double, kPhases> phase_exposed_ms{};
  int collectives = 0;   // collectives issued this step
  int comm_untimed = 0;  // of those, how many comm_ms could not include
};

// One optimizer step of the job: its time is the slowest rank's, its loss
// the mean over the ranks that compute one.
struct StepRecord {
  int64_t step = 0;  // 1, 2, ...
  int64_t epoch = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;  // before clipping; 0 without clipping
  bool skipped = false;  // fp16 overflow: the optimizer step was skipped
  // Data-set rows the step trained on over the job (lib/train/samples.h: a
  // short last micro-batch and the sampler's repeats are not samples).
  int64_t samples = 0;
  StepTimes times;
  // A pipeline's bubble: the share of their step windows its stages sat idle
  // (mean over the ranks; -1: no pipeline).
  double bubble = -1;
};

// run.json's "steps".
nlohmann::json steps_json(const std::vector<StepRecord>& steps);
std::vector<StepRecord> steps_from_json(const nlohmann::json& steps);

// loss.csv: step, epoch, loss, lr, ms.
std::string loss_csv(const std::vector<StepRecord>& steps);
struct StepSeries {
  std::vector<double> ms;    // every optimizer step, warm-up included
  std::vector<double> loss;  // training loss per step
  std::vector<int64_t> step;
};
// The loss.csv beside `origin` (run.json or summary.csv in a run folder);
// empty when there is none or it does not read.
StepSeries read_step_series(const std::filesystem::path& origin);

// One rank's means over the timed steps (its own, not the slowest rank's):
// step (the sum of its phases), each phase and its exposed part, comm and
// comm_exposed.
struct RankTiming {
  int rank = 0;
  double step_ms = 0;
  std::array<double, kPhases> phase_ms{};
  std::array<double, kPhases> phase_exposed_ms{};
  double comm_ms = 0, comm_exposed_ms = 0;
};
// run.json's "rank_timing_ms": one object per rank, rank order.
nlohmann::json rank_timing_json(const std::vector<RankTiming>& ranks);
// The run.json beside `origin` (or `origin` itself); nothing when it has no
// per-rank timing (older files, summary.csv alone) or does not read.
std::optional<std::vector<RankTiming>> read_rank_timing(const std::filesystem::path& origin);

}  // namespace hpcbench::results
