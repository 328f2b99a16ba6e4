#include "run/job.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "core/error.h"
#include "core/injection.h"
#include "core/printable.h"
#include "core/self_exec.h"
#include "core/stop_signal.h"
#include "device/device.h"
#include "distributed/launch_env.h"
#include "distributed/local_launcher.h"
#include "distributed/process_group.h"
#include "distributed/step_stop.h"
#include "preflight/resources.h"
#include "preflight/run_inputs.h"
#include "results/run_folder.h"
#include "run/data_dump.h"
#include "run/fault_hook.h"
#include "run/job_checks.h"
#include "run/job_results.h"
#include "run/rank_context.h"
#include "run/repeats.h"
#include "run/trainer.h"
#include "tensorboard/run_log.h"
#include "train/determinism.h"

namespace hpcbench::run {

namespace {

// Whether a second stop signal ends this process at once: only for a run
// alone at a terminal. A rank's launcher (or SLURM's time limit) and a
// --repeats parent each decide for their children; the latter passes on
// what it receives, so that its child hears a terminal's Ctrl-C twice.
bool second_signal_kills() {
  if (std::getenv(kStopParentVariable) || dist::launched_as_rank()) return false;
  try {
    return dist::detect_layout().world_size == 1;
  } catch (const UserError&) {
    return false;  // a layout in doubt: its error comes where the layout is read
  }
}

// --nproc-per-node: this machine's ranks, started by the built-in launcher
// once what they would all check is checked here. `repeat_flags`: a
// --repeats parent's repeat, whose ranks get those flags instead of --repeats.
int launch_ranks(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                 const std::vector<std::string>& repeat_flags = {}) {
  // The launcher's ranks meet on this machine at a port it finds free, as
  // torchrun --standalone does: a MASTER_ADDR or MASTER_PORT left in the
  // environment (a job script's, torchrun's habit) is not what they use.
  for (const char* var : {"MASTER_ADDR", "MASTER_PORT"})
    if (const char* v = std::getenv(var); v && *v)
      spdlog::warn("{}={} is not used under --nproc-per-node {}: the built-in launcher's ranks meet on 127.0.0.1 at "
                   "a free port it picks; to choose the address, start the ranks with torchrun or srun instead",
                   var, printable(v, 128), o.nproc_per_node);
  if (o.dry_run) preflight::check_folder_writable("--results-dir", cfg.results_dir, results_bytes(cfg));
  else results::check_results_dir(cfg.results_dir);
  dist::LaunchOptions launch{.nproc = o.nproc_per_node};
  if (!repeat_flags.empty()) {
    launch.drop_flags = {"--repeats"};
    launch.extra_args = repeat_flags;
  }
  if (cfg.threads == 0) {
    launch.threads_per_rank = dist::threads_per_rank(dist::current_environment(), o.nproc_per_node,
                                                     at::get_num_threads());
    if (launch.threads_per_rank > 0)
      spdlog::info("{} ranks share this machine's {} intra-op threads: {} each (--threads to choose)",
                   o.nproc_per_node, at::get_num_threads(), launch.threads_per_rank);
  }
  check_before_start(cfg, choice, o, o.nproc_per_node, o.nproc_per_node, threads_of(cfg, launch.threads_per_rank),
                     fmt::format("--nproc-per-node {}", o.nproc_per_node), true);
  if (o.dry_run) return dry_run_done();
  throw_if_stopped("the run was checked, before its ranks started; nothing was measured");
  return dist::launch_local(launch);
}

// What this rank checks before its rendezvous: rank 0's results folder and
// the space it sets aside, the node's files and resources (one rank per node
// speaks for the node), and the job's layout against the flags.
void check_rank_start(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                      const dist::RankLayout& layout) {
  if (auto note = check_injection(layout.world_size); !note.empty() && layout.rank == 0) spdlog::warn("{}", note);
  if (layout.rank == 0) {
    results::check_results_dir(cfg.results_dir);
    results::reserve_results_space(cfg.results_dir, results_bytes(cfg));
  }
  // Ranks of the built-in launcher: it checked all of this before it started them.
  if (!std::getenv("HPCBENCH_LAUNCHER_PID")) {
    const int threads = threads_of(cfg, 0);
    const std::string who = layout.world_size > 1
                                ? fmt::format("the job's {} rank(s) on this node", layout.local_world_size)
                                : (cfg.threads > 0 ? fmt::format("--threads {}", cfg.threads) : std::string("this run"));
    // One rank per node speaks for the node; rank 0 alone writes the files.
    if (layout.local_rank == 0)
      check_before_start(cfg, choice, o, layout.local_world_size, layout.world_size, threads, who, layout.rank == 0);
    else
      preflight::check_eval_set(cfg);
  }
  bool accel = cfg.device != "cpu" && (cfg.device != "auto" || accelerator_count() > 0);
  dist::check_layout(layout, {.nodes = o.nodes, .gpus_per_node = o.gpus_per_node, .uses_accelerator = accel,
                              .visible_devices = accelerator_count(),
                              .bound_by_visible_devices = dist::one_visible_device_named(dist::current_environment()),
                              .shared_devices = o.allow_shared_gpu});
}

// This rank's run, from its hooks to its exit status; rank 0 writes the
// results once every rank got there.
int train_rank(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
               const RunContext& ctx) {
  dist::StepStop stop(ctx.comm);
  TrainHooks hooks;
  hooks.stop_before = [&stop](int64_t done) { return stop.stop_here(done); };
  hooks.initial_checkpoint = o.save_initial_checkpoint;
  hooks.final_checkpoint = o.save_checkpoint;
  if (!o.dump_data.empty())
    hooks.after_training = [file = o.dump_data](const SampleOrder& order) { dump_data(order, file); };
  hooks.after_step = fault_hook(ctx.rank);
  // Named at the start: the TensorBoard log is written under it as the run goes.
  std::string name = cfg.run_name.empty() ? default_run_name(choice, ctx.world_size) : cfg.run_name;
  // The folder's name is taken now, before the first step: a run of the same
  // name that started beside this one takes the next (results/run_folder.h).
  if (ctx.rank == 0) results::claim_run_folder(cfg.results_dir, name);
  if (cfg.tensorboard == "on") hooks.tensorboard_dir = tensorboard::live_dir(cfg.results_dir, name);
  auto out = train(cfg, choice, ctx, hooks);
  const bool interrupted = out.result.status == "interrupted";
  const int sig = stop.signal();
  // Only a job whose every rank got here leaves a results folder.
  if (ctx.comm) ctx.comm->barrier();
  if (interrupted && out.result.steps == 0) {
    if (ctx.rank == 0) {
      tensorboard::discard_event_files(hooks.tensorboard_dir);
      spdlog::warn("interrupted by {} before the first step: nothing was measured, so no results folder was written",
                   signal_name(sig));
    }
    return interrupted_exit(sig);
  }
  if (ctx.rank != 0) {
    // Rank 0 writes the interrupted run's folder before any rank exits: a
    // failed rank's exit would end the job step (srun --kill-on-bad-exit).
    if (interrupted && ctx.comm) ctx.comm->barrier();
    return interrupted ? interrupted_exit(sig) : 0;
  }
  return write_results(cfg, name, std::move(out), stop, ctx, hooks);
}

}  // namespace

int run_job(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o) {
  // Caught from the start, not only once the run is ready: SLURM sends the
  // --signal at once when the limit is short, and a stop that comes during
  // the checks, the data's loading or the rendezvous is an interruption
  // like any other, not a death by signal.
  install_stop_handlers(second_signal_kills());
  check_options(cfg, choice, o);
  // Before anything touches a device, and before the ranks or repeats are
  // started, which inherit its cuBLAS setting.
  train::use_deterministic_kernels(cfg.deterministic);
  if (o.repeats > 1 && !o.dry_run) {
    results::check_results_dir(cfg.results_dir);
    // A repeat of local ranks is started from here: its ranks are fresh
    // processes either way, and a child in between (the loader, LibTorch's
    // start-up, the checks: ~0.6 s a repeat) only relayed them.
    RanksHere ranks_here;
    if (o.nproc_per_node > 0)
      ranks_here = [&](const std::string& name, const std::string& group, int64_t index,
                       const std::vector<std::string>& flags) {
        auto c = cfg;
        c.run_name = name;
        auto one = o;
        one.repeats = 1;
        one.repeat_group = group;
        one.repeat_index = index;
        return launch_ranks(c, choice, one, flags);
      };
    return run_repeats(cfg, choice, o, ranks_here);
  }
  if (o.nproc_per_node > 0) return launch_ranks(cfg, choice, o);

  auto layout = dist::detect_layout();
  if (o.dry_run) {
    if (auto note = check_injection(layout.world_size); !note.empty()) spdlog::warn("{}", note);
    // The job's nodes are not this one (a sweep checks on the login node):
    // what this command line decides is checked, not this node's resources.
    preflight::check_folder_writable("--results-dir", cfg.results_dir, results_bytes(cfg));
    check_files(cfg, o, true);
    return dry_run_done();
  }
  // A time limit (SLURM's SIGTERM, or the --signal asked for ahead of it),
  // scancel or Ctrl-C stops the run at its next step boundary with what it
  // measured. Under a launcher or SLURM a second signal is the launcher's
  // or the time limit's own business; alone, a second Ctrl-C ends it.
  install_stop_handlers(second_signal_kills());
  check_rank_start(cfg, choice, o, layout);
  RunContext ctx = rank_context(layout, cfg, choice, o);
  if (auto device = ctx.comm ? ctx.comm->device() : resolve_device(cfg.device, layout.local_rank); !device.is_cpu()) {
    auto d = describe(device);
    preflight::check_device_memory(cfg, choice, layout.world_size, layout.local_world_size, d.total_memory, d.name);
  }
  return train_rank(cfg, choice, o, ctx);
}

}  // namespace hpcbench::run
