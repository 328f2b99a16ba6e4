#include "run/job_checks.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/injection.h"
#include "device/device.h"
#include "distributed/launch_env.h"
#include "preflight/resources.h"
#include "preflight/run_inputs.h"
#include "preflight/run_settings.h"
#include "results/run_folder.h"
#include "train/profile_steps.h"
#include "specs/registry.h"

namespace hpcbench::run {

namespace {

// Whether the job's processes can run the strategy: one that drives several
// devices from one process runs as one process (the rest is
// preflight::check_run_settings, on the devices).
void check_processes(const strategies::Choice& choice, const strategies::Shape& processes) {
  if (processes.world() <= 1) return;
  const auto devices_option = choice.spec().traits().devices_option;
  if (!devices_option.empty()) {
    auto options = choice.options().clone();
    std::string flag;
    for (auto& s : options->settings())
      if (s.key == devices_option) flag = s.flag;
    fail("--strategy {} drives every device from one process ({} says how many), but the job has {} processes; "
         "run it as one", choice.name(), flag, processes.world());
  }
}

// The job's processes: --nproc-per-node here; a launched job's ranks; for
// `--dry-run` (on a login node, for a sweep) the --nodes x --gpus-per-node
// the job will have; else this one process.
strategies::Shape job_processes(const JobOptions& o) {
  if (o.nproc_per_node > 0) return {1, o.nproc_per_node};
  const auto layout = dist::detect_layout();
  if (layout.world_size > 1) {
    const int nodes = std::max(layout.num_nodes, 1);
    return {nodes, layout.world_size / nodes};
  }
  if (o.dry_run && (o.nodes > 0 || o.gpus_per_node > 0))
    return {std::max(o.nodes, 1), std::max(o.gpus_per_node, 1)};
  return {1, 1};
}

}  // namespace

void check_options(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o) {
  // Zero or fewer would silently run one process (or check nothing).
  if (o.nproc_per_node < 0) fail("--nproc-per-node {}: must be at least 1", o.nproc_per_node);
  if (o.nodes < 0) fail("--nodes {}: must be at least 1", o.nodes);
  if (o.gpus_per_node < 0) fail("--gpus-per-node {}: must be at least 1", o.gpus_per_node);
  const auto processes = job_processes(o);
  check_processes(choice, processes);
  // The one check of the settings that `run --dry-run`, `sweep` and `predict`
  // make too.
  preflight::check_run_settings(cfg, choice, preflight::job_devices(choice, processes));
  if (!(o.collective_timeout_s > 0)) fail("--collective-timeout {}: must be positive", o.collective_timeout_s);
  if (!(o.connect_timeout_s > 0)) fail("--connect-timeout {}: must be positive", o.connect_timeout_s);
  if (o.backend != "auto" && o.backend != "nccl" && o.backend != "gloo")
    fail("--backend {}: unknown (use auto, nccl or gloo)", o.backend);
  if (o.keep_collectives && !choice.spec().traits().needs_comm) {
    std::vector<std::string> communicating;
    for (auto* s : strategies::specs())
      if (s->traits().needs_comm) communicating.push_back(s->name());
    fail("--keep-collectives applies to strategies that communicate ({}), not {}", fmt::join(communicating, ", "),
         choice.name());
  }
  if (cfg.device == "cpu" && o.backend == "nccl") fail("--backend nccl needs --device cuda (NCCL runs on GPUs only)");
  if (o.allow_shared_gpu && o.backend != "gloo")
    fail("--allow-shared-gpu needs --backend gloo: NCCL refuses two ranks on one GPU (\"duplicate GPU\"), while "
         "Gloo stages CUDA tensors through host memory and lets ranks share it");
  // What would otherwise fail only when the results are written, after the
  // whole run: the name, and a results folder that can take it.
  if (!cfg.run_name.empty()) results::check_run_name(cfg.run_name);
  if (!o.repeat_group.empty()) results::check_run_name(o.repeat_group, "--repeat-group");
  if (o.repeats < 1) fail("--repeats {}: must be at least 1", o.repeats);
}

int threads_of(const train::TrainConfig& cfg, int launcher_share) {
  if (cfg.threads > 0) return static_cast<int>(cfg.threads);
  return launcher_share > 0 ? launcher_share : at::get_num_threads();
}

void check_files(const train::TrainConfig& cfg, const JobOptions& o, bool writes_outputs) {
  preflight::check_input_files(cfg);
  preflight::check_vocab_fits_model(cfg);
  preflight::check_eval_set(cfg);
  if (!writes_outputs) return;
  const bool checkpoints = !o.save_checkpoint.empty() || !o.save_initial_checkpoint.empty();
  preflight::check_outputs({o.save_checkpoint, o.save_initial_checkpoint, o.dump_data,
                            checkpoints ? preflight::checkpoint_bytes(cfg) : 0});
}

int64_t results_bytes(const train::TrainConfig& cfg) {
  // --profile's trace and table: a bert-base step's trace is a few MB on a GPU; 16 MiB a step is room.
  const int64_t profile_bytes = train::parse_profile_steps(cfg.profile).count() * (int64_t{16} << 20);
  return results::results_space_estimate(cfg.max_steps, !cfg.eval_data.empty(), cfg.tensorboard == "on") +
         profile_bytes;
}

void check_before_start(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                        int ranks, int world, int threads, const std::string& ranks_flag, bool writes_outputs) {
  if (auto note = check_injection(world); !note.empty()) spdlog::warn("{}", note);
  check_files(cfg, o, writes_outputs);
  if (auto w = preflight::core_warning(ranks, threads, preflight::node_cores(), ranks_flag); !w.empty())
    spdlog::warn("{}", w);
  bool accel = cfg.device != "cpu" && (cfg.device != "auto" || accelerator_count() > 0);
  preflight::check_memory(cfg, choice, ranks, world, accel, ranks_flag);
}

int dry_run_done() {
  fmt::print("hpcbench run --dry-run: the flags, the files the run reads and writes, the evaluation set, the cores "
             "and the memory check out; nothing was run\n");
  return 0;
}

}  // namespace hpcbench::run
