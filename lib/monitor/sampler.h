#pragma once
// What the devices did during a run, sampled on a background thread of each
// node's first rank: the GPUs of the node's ranks through NVML (utilisation,
// memory, power, SM clock, temperature, throttle reasons, the energy counter;
// on a shared node other jobs' GPUs must not count) and the node's ranks'
// process trees from /proc (CPU utilisation, resident memory).
//
// Each sample carries the step the trainer was in when it was taken: the
// trainer publishes it through one atomic (set_step), which the sampler reads
// without a lock, so the training loop never waits for the sampler.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "results/utilisation_csv.h"

namespace hpcbench::monitor {

class Nvml;
class ProcTrees;

// Step codes besides the training steps (1, 2, ...).
inline constexpr int64_t kSetup = 0;        // before the first step
inline constexpr int64_t kEvaluation = -1;  // evaluation after training
inline constexpr int64_t kDone = -2;        // between training and evaluation, and after

// One reading: results' utilisation row without the host, phase and bus
// id that csv_rows adds (step is the trainer's code when it was taken).
using Sample = results::UtilisationSample;

// A PCI bus id as "0000:1B:00.0" (upper-case hex, at least four domain
// digits) from CUDA's form or NVML's ("00000000:1B:00.0"), so the two
// compare equal; "" when `id` is no bus id.
std::string normalise_bus_id(const std::string& id);

// Which of NVML's GPUs a node's sampler reads.
struct GpuSelection {
  std::vector<unsigned> indices;  // NVML's indices, ascending
  bool all = true;                // every GPU of the node, not (known to be) the job's alone
  std::string note;               // why every GPU ("" when the ranks' own)
};
// The GPUs whose bus ids (NVML's, by NVML index; "" unknown) are those of
// the node's ranks (`rank_bus_ids`, CUDA's). Where some rank's bus id is
// unknown (a CPU run, a driver that cannot say) or NVML shows none with it,
// every GPU, with a note saying why.
GpuSelection select_gpus(const std::vector<std::string>& nvml_bus_ids, const std::vector<std::string>& rank_bus_ids);

// A rank's bus id for the sampler: `found` (device_bus_id), unless bus_ids
// are injected (core/injection.h; CPU runs have no bus id), when it is entry
// `local_rank` of that list ("" past its end).
std::string rank_bus_id(const std::string& found, int local_rank);

struct SamplerOptions {
  int64_t interval_ms = 100;  // 0: no thread (sample_now alone)
  bool gpus = true;           // sample NVML's GPUs
  std::vector<std::string> bus_ids;  // the node's ranks' GPUs (select_gpus); empty: every GPU
  std::vector<std::pair<int, pid_t>> ranks;  // (rank, pid) whose process trees to read
  std::function<double()> clock;  // seconds; default the steady clock (tests script it)
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);
  ~Sampler();  // stops and joins: safe while an exception unwinds
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  void stop();  // idempotent
  void set_step(int64_t code) noexcept { step_.store(code, std::memory_order_relaxed); }
  int64_t step() const noexcept { return step_.load(std::memory_order_relaxed); }
  // One sample now, on the caller's thread (the timed window's boundaries).
  void sample_now();

  bool gpu_sampling() const;
  // Why GPU sampling is off ("" when on or not asked for).
  std::string gpu_note() const;
  // The GPUs sampled (meaningful when gpu_sampling()).
  const GpuSelection& gpu_selection() const { return selection_; }
  // NVML's index -> bus id ("" unknown) of each GPU sampled.
  std::map<int, std::string> gpu_bus_ids() const;
  std::vector<Sample> samples() const;

 private:
  void loop();
  void take();

  SamplerOptions options_;
  std::unique_ptr<Nvml> nvml_;
  std::unique_ptr<ProcTrees> procs_;
  GpuSelection selection_;
  std::vector<std::string> nvml_bus_ids_;  // by NVML index
  std::vector<bool> lost_;
  std::vector<std::optional<std::pair<double, double>>> last_cpu_;  // (t, cpu_s) per rank
  double t0_ = 0;
  std::atomic<int64_t> step_{kSetup};
  mutable std::mutex mutex_;  // samples_, the readers' state
  std::vector<Sample> samples_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// The figures over the timed steps [first_step, last_step].
struct Summary {
  std::string util_of;          // "gpu", "cpu" or "" (nothing sampled)
  double util_mean_percent = -1;
  int64_t util_samples = 0;     // the mean's weight when nodes are combined
  double power_mean_w = -1;     // sum over GPUs of each GPU's mean power
  double energy_j = -1;         // sum over GPUs
  std::string energy_method;    // "counter" (every GPU's), "power_integral" (some GPU's) or ""
  int64_t nvml_peak_memory_bytes = -1;  // the largest any GPU used, over the whole run
};
Summary summarize(const std::vector<Sample>& samples, int64_t first_step, int64_t last_step);
// One node's summaries into the job's (the means weighted, the sums added).
Summary combine(const std::vector<Summary>& nodes);

// "setup", "warmup", "timed", "evaluation" or "end" for a step code.
const char* phase_of(int64_t step, int64_t warmup_steps);
// Rows for utilisation.csv; `host` names the node, `gpu_bus_ids` the GPU
// rows' bus ids by index (Sampler::gpu_bus_ids).
std::string csv_rows(const std::vector<Sample>& samples, const std::string& host, int64_t warmup_steps,
                     const std::map<int, std::string>& gpu_bus_ids = {});

}  // namespace hpcbench::monitor
