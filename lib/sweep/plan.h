#pragma once
// What a sweep runs: the cross product of strategies x node counts x GPUs per
// node, as one SLURM job each (a job array cannot change its node count from
// one element to the next), plus the single-device baseline every speed-up is
// measured against.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hpcbench::sweep {

struct SweepOptions {
  std::vector<std::string> strategies;  // labels, as `run --strategy` takes them
  std::vector<int> nodes;
  std::vector<int> gpus_per_node;  // tasks per node in CPU mode
  std::filesystem::path out_dir;   // the sweep folder
  std::filesystem::path hpcbench;  // the binary the jobs run (shared file system)
  // Site-specific sbatch options: passed through when given, never invented.
  std::string partition, account, time, constraint, qos;
  std::string gres_type;       // "a100" -> --gres=gpu:a100:N; empty -> --gres=gpu:N
  int cpus_per_task = 0;       // 0: the site's default
  bool cpu = false;            // CPU cluster: no --gres, Gloo, --device cpu
  std::string job_name_prefix = "hpcbench";
  std::vector<std::string> run_args;  // extra `hpcbench run` flags, verbatim
  // > 0: every job trains on this many sequences per step (--batch-size is
  // set to it divided by the job's devices), so that the baseline and the
  // strategies are comparable as strong scaling (speedup, efficiency).
  int global_batch = 0;
  // > 1: every configuration is N jobs, <name>-r1 ... -rN, so that repeats
  // land on different nodes and times, as a user's would.
  int repeats = 1;
};

struct SweepJob {
  std::string name;      // "<strategy>-<nodes>x<gpus>", also the run folder's name
  std::string strategy;  // its label (specs/spec.h)
  int nodes = 1;
  int gpus_per_node = 1;
  int world_size() const { return nodes * gpus_per_node; }
  // The data-parallel replicas the global batch splits over (every device,
  // unless devices hold parts of one model: the spec's data_parallel_size).
  int replicas() const;
  // `hpcbench run` flags of this job alone, after the sweep's run_args
  // (a layout `plan` chose with recomputation: --activation-checkpointing).
  std::vector<std::string> extra_args;
  std::string repeat_group;  // the configuration's name when repeated, else ""
  int repeat_index = 0;      // 1..N when repeated
  // Relative to the sweep folder.
  std::filesystem::path script;   // jobs/<name>.sbatch
  std::filesystem::path run_dir;  // runs/<name>
  std::string log;                // logs/<name>-%j.out (sbatch's pattern)
  // Filled in by submission.
  std::optional<std::string> job_id;
  std::string state = "written";  // written, submitted, submit_failed
  std::string submit_error;
  // Jobs of this entry that ended without results before a resume
  // submitted it again, oldest first (their logs stay in logs/).
  std::vector<std::string> previous_job_ids;
};

// Checks the options (strategy labels, positive counts, flags that the sweep
// sets itself not repeated in run_args) and lists the jobs: the one-device
// reference 1x1 first, then every other strategy at every layout. The
// reference only ever runs on one device, whatever layouts are asked for.
std::vector<SweepJob> plan_jobs(const SweepOptions& opts);

// "1,2,4" -> {1, 2, 4}; throws UserError naming `flag` on anything else.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag);
std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag);
// Comma-separated strategy labels (a "key=value" entry continues the label
// before it, as in "zero:stage=3,prefetch=off,ddp"), in their canonical form.
std::vector<std::string> parse_strategy_list(const std::string& text, const std::string& flag);

}  // namespace hpcbench::sweep
