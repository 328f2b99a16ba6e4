#pragma once
// A training run's TensorBoard log (rank 0): the trainer's glue to
// EventWriter, with run.json's vocabulary. Tags follow Lightning's and
// TensorBoard's grouping:
//   train/loss, train/lr, train/grad_norm                      per optimizer step
//   perf/step_ms, perf/samples_per_s, perf/comm_ms,
//   perf/comm_exposed_ms, perf/peak_memory_bytes               per optimizer step
//   device/<gpuN|cpu_rankN>/{utilisation_percent,memory_bytes,power_w,energy_j}
//                                                              per sample (step: ms since sampling began)
//   eval/loss, eval/exact_match, eval/f1                       at the last step
//   run/settings                                               the settings, as a Markdown table
// With several nodes the device tags carry the host: device/<host>/gpuN/...
//
// While the run goes the file holds rank 0's own figures, flushed every few
// seconds; finish() rewrites it with the job's (run.json's: the slowest
// rank's step time, the loss averaged over ranks, every node's samples),
// keeping each step's wall time.
#include "results/run_record.h"
#include "results/steps.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hpcbench::monitor {
class Sampler;
}

namespace hpcbench::tensorboard {

class EventWriter;

struct RunLogOptions {
  std::filesystem::path dir;  // empty: no log
  int64_t global_batch = 1;   // for samples/s
  std::vector<std::pair<std::string, std::string>> settings;
  const monitor::Sampler* sampler = nullptr;  // live device samples (this node's); may be null
  std::string host;           // this node, for the device tags
  bool several_nodes = false;
  double flush_secs = 2;
};

// One optimizer step, as run.json's "steps" records name it.
struct StepValues {
  int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0, ms = 0, comm_ms = 0, comm_exposed_ms = 0;
  int64_t peak_memory_bytes = 0;
  int64_t samples = 0;  // rows the step trained on (train/samples.h); 0: the global batch
  // False on a rank with no loss of its own (a pipeline's first stages): the
  // live file then shows no train/loss rather than a 0, until finish()
  // writes the job's.
  bool has_loss = true;
};

class RunLog {
 public:
  explicit RunLog(RunLogOptions options);
  ~RunLog();
  bool enabled() const { return writer_ != nullptr; }

  void step(const StepValues& v);
  // The job's figures: run.json's details (its "steps") and result, and
  // utilisation.csv's text. Rewrites the file; nothing is written after.
  void finish(const std::vector<results::StepRecord>& steps, const results::RunResult& result,
              const std::string& utilisation_csv);

 private:
  void add_live_samples();
  void rewrite(const std::filesystem::path& file, const std::vector<results::StepRecord>& steps,
               const results::RunResult& result, const std::string& utilisation_csv);

  RunLogOptions options_;
  std::unique_ptr<EventWriter> writer_;
  double start_wall_ = 0;
  int uncaught_at_start_ = 0;
  size_t samples_done_ = 0;  // live samples already written (the flushing thread's)
  std::map<std::string, double> live_energy_origin_;
  std::vector<std::pair<int64_t, double>> step_walls_;
  std::vector<int64_t> step_memory_;
};

// The event files this process wrote into a finished run's log folder
// (name -> content), for its results folder; `dir` may be absent (no log).
// Another run of the same name may be writing beside them: its files are
// not taken.
std::vector<std::pair<std::string, std::string>> event_files(const std::filesystem::path& dir);
// Removes this process's event files from `dir`, and `dir` (and the
// .running folder holding it) when that empties it.
void discard_event_files(const std::filesystem::path& dir);
// Where a run's log lives while it runs: <results_dir>/.running/<name>, a
// hidden folder as the results folder's own unfinished copy; a run that
// is killed leaves it there, readable up to its last flush; one that fails
// with an error removes it, as it leaves no results folder.
std::filesystem::path live_dir(const std::filesystem::path& results_dir, const std::string& run_name);

}  // namespace hpcbench::tensorboard
