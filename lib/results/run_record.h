#pragma once
// One run's headline figures: the row that results/README.md documents and
// `hpcbench report` reads back; summary.csv's writer and reader, and the
// "result" object of run.json.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace hpcbench::results {

// 2: repeat_group/repeat_index, the device sampler's columns (utilisation_*,
// power, energy); 3: peak_memory_bytes the reserved peak, peak_allocated_bytes.
inline constexpr int kSchemaVersion = 3;

struct RunResult {
  // identity
  int64_t schema_version = kSchemaVersion;
  std::string run_id;
  std::string started_at;  // ISO 8601 UTC
  std::string hpcbench_version;
  std::string git_commit;
  std::string hosts;  // space-separated, rank order
  std::string slurm_job_id;
  // Repeats of one configuration (`run --repeats`, `sweep --repeats`) share
  // the group; the report groups runs by configuration, this says which
  // invocation they came from. "" and 0 for a single run (schema < 2 too).
  std::string repeat_group;
  int64_t repeat_index = 0;  // 1..N
  // set-up
  std::string strategy;
  std::string strategy_options;
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t world_size = 1;
  std::string device;  // "cpu", "cuda"
  std::string device_name;
  std::string precision;
  std::string model;
  int64_t parameters = 0;
  int64_t seq_length = 0;
  int64_t batch_per_device = 0;
  int64_t global_batch = 0;  // per optimizer step, all ranks and accumulation
  int64_t grad_accum = 1;
  std::string data;  // "synthetic:<n>:<seed>" or the SQuAD file's name and content hash
  int64_t steps = 0;           // optimizer steps run
  int64_t timed_steps = 0;     // steps after the timing warm-up
  int64_t samples_timed = 0;   // sequences processed in the timed steps
  // figures (timed steps only; evaluation is never inside them)
  double train_time_s = 0;     // sum of the timed step times
  double wall_time_s = 0;      // the whole training loop, warm-up included
  double samples_per_s = 0;
  double samples_per_s_per_device = 0;
  double tokens_per_s = 0;
  double step_ms_median = 0, step_ms_p90 = 0, step_ms_max = 0, step_ms_mean = 0, step_ms_stddev = 0;
  // The run's step figure is its median; beside it the fastest step and the
  // interquartile range, which one spike does not move, and the timed steps
  // that stand out (stats/steps.h), counted and named ("step 12 (3.05x the
  // median), ..."). 0 and "" in files older than the fields.
  double step_ms_min = 0, step_ms_iqr = 0;
  int64_t step_outliers = 0;
  std::string step_outlier_steps;
  double data_ms = 0, forward_ms = 0, backward_ms = 0, comm_ms = 0, comm_exposed_ms = 0, optimizer_ms = 0;  // medians
  double flops_per_sample = 0;
  double tflops_per_device = 0;
  double peak_tflops = 0;  // 0: unknown device, no MFU
  double mfu = 0;          // fraction, 0 when unknown
  // With activation checkpointing the recomputed forward: FLOPs the hardware
  // ran per sample, and their utilisation (HFU); equal to the model's FLOPs
  // and MFU without it. 0 in files older than the fields.
  double hardware_flops_per_sample = 0;
  double hfu = 0;
  int64_t activation_checkpointing = 0;  // 1: every encoder layer recomputed in backward
  // What the device held at its peak, the largest rank's: the caching
  // allocator's reserved peak on GPUs (its cache and a CUDA graph's private
  // pool included), peak resident memory on CPU; nvml_peak_memory_bytes
  // beside it is the whole process as the driver saw it. In schema 2 and
  // older it was the allocated peak (peak_allocated_bytes now).
  int64_t peak_memory_bytes = 0;
  // The peak of live tensors on GPUs (the caching allocator's allocated
  // peak, the largest rank's); 0 on CPU, -1 in files older than the field.
  int64_t peak_allocated_bytes = -1;
  int64_t model_state_bytes = 0;  // parameters + gradients + optimizer states, the largest rank's
  int64_t model_state_theory_bytes = 0;  // what the memory model says (docs/memory.md); 0: not recorded
  double final_train_loss = 0;
  double val_loss = -1;  // -1: no evaluation
  double exact_match = -1;
  double f1 = -1;
  // Evaluation's own clock (-1: no evaluation, or a file older than the
  // field): loading the dev set's windows; forward over every rank's share
  // until rank 0 holds all the logits; answer post-processing; EM/F1.
  double eval_load_s = -1, eval_forward_s = -1, eval_postprocess_s = -1, eval_metric_s = -1;
  // What the devices did over the timed steps (lib/monitor; -1: not sampled,
  // or a file older than the fields). utilisation_of: "gpu" (NVML, mean over
  // GPUs and samples) or "cpu" (/proc, a rank's process tree in percent of
  // one core, mean over ranks and samples). power_mean_w and energy_j are the
  // job's GPUs together; energy_method: "counter" (NVML's energy counter) or
  // "power_integral" (some GPU had none). nvml_peak_memory_bytes: the most
  // any one GPU had in use over the whole run, as NVML saw it.
  std::string utilisation_of;
  double utilisation_mean_percent = -1;
  double power_mean_w = -1;
  double energy_j = -1;
  std::string energy_method;
  double samples_per_kj = -1;
  int64_t nvml_peak_memory_bytes = -1;
  // Collectives of the timed steps whose time comm_ms could not include
  // (lib/train/step_timer.h); -1: a file older than the field.
  int64_t comm_untimed = -1;
  // The CPUs the job had on rank 0's node (SLURM_CPUS_ON_NODE in a SLURM
  // job, else the process's affinity and cgroup quota) and the intra-op
  // threads rank 0 ran with; -1: a file older than the fields. Ranks per
  // node x threads above the cores: the ranks shared them.
  int64_t cpu_cores = -1;
  int64_t threads_per_rank = -1;
  // A pipeline's bubble (-1: not a pipeline, or a file older than the
  // fields): the median over the timed steps of the share of its step window
  // a stage sat idle (mean over the stages), and the textbook figure for its
  // stages and micro-batches, (P - 1) / (M + P - 1).
  double bubble_fraction = -1;
  double bubble_theory = -1;
  // The fast engine's settings (docs/gpu.md). cuda_graph: "off", "captured"
  // (the optimizer step replayed from a CUDA graph; steps with an epoch's
  // short last micro-batch ran outside it, "captured, N short steps
  // outside"), or "not captured: <why>" (--cuda-graph where no capture is
  // possible, a CPU: the graph-ready step ran eagerly); "" in files older
  // than the field. fused: 1 with --fused.
  std::string cuda_graph;
  int64_t fused = 0;
  // The engine as chosen (train/engine.h): "eager", "graph", "fused" or
  // "graph+fused", and how (the flags, or what --engine auto decided and
  // why); "" in files older than the fields.
  std::string engine;
  std::string engine_reason;
  // ok, failed, pending, running; interrupted (a stop signal ended the run
  // early: its figures are over the steps done); "unknown" when a file has
  // no status.
  std::string status = "ok";
};

// Devices a run computed on: its ranks, or for dp (one process driving
// several devices) the devices per node times the nodes.
inline int64_t devices(const RunResult& r) { return std::max(r.world_size, r.nodes * r.gpus_per_node); }

using ColumnTarget = std::variant<int64_t RunResult::*, double RunResult::*, std::string RunResult::*>;
struct Column {
  const char* name;
  const char* unit;  // "" when unitless
  ColumnTarget member;
};
// Columns in CSV order; the names are the schema.
const std::vector<Column>& columns();

// summary.csv: the header and one row per run.
std::string csv_header();
std::string csv_row(const RunResult& r);
// One summary.csv row under `header`. Columns the schema does not know are
// returned in `extra` (when given) instead of being dropped; absent columns
// keep their defaults, and schema_version is 0 when absent; status is
// "unknown" when absent or empty (never taken as ok). Throws UserError
// naming the column when a value does not parse, or when the record's field
// count differs from the header's (a truncated row).
RunResult result_from_csv(const std::vector<std::string>& header, const std::vector<std::string>& record,
                          std::map<std::string, std::string>* extra = nullptr);
nlohmann::json to_json(const RunResult& r);
// Reads the fields present; unknown fields are ignored, missing ones keep
// their defaults (so files of an older schema version still load), except
// status: without one it is "unknown", never ok. A null figure (NaN or
// infinity when written) reads as NaN.
RunResult from_json(const nlohmann::json& j);

}  // namespace hpcbench::results
