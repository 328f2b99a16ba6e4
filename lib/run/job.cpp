#include "run/job.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "core/injection.h"
#include "core/hostinfo.h"
#include "core/self_exec.h"
#include "core/stop_signal.h"
#include "core/text_wrap.h"
#include "core/time.h"
#include "device/device.h"
#include "distributed/launch_env.h"
#include "distributed/local_launcher.h"
#include "distributed/process_group.h"
#include "distributed/step_stop.h"
#include "preflight/resources.h"
#include "preflight/run_inputs.h"
#include "preflight/run_settings.h"
#include "results/run_folder.h"
#include "run/data_dump.h"
#include "run/trainer.h"
#include "specs/registry.h"
#include "tensorboard/run_log.h"
#include "train/setup.h"

namespace hpcbench::run {

namespace {

// An injected fault (core/injection.h): that rank fails after `after`
// optimizer steps, so that tests can check that a broken job ends promptly,
// names the rank and leaves no results.
std::function<void(int64_t)> fault_hook(int rank) {
  auto fault = injected_fault({"kill", "abort", "exit", "hang", "stop", "term"});
  if (!fault || fault->rank != rank) return {};
  return [f = *fault, fired = false](int64_t step) mutable {
    if (step < f.after || fired) return;
    fired = true;
    carry_out(f, "steps");
  };
}

// The variables that steer NCCL and the sockets; they reach every rank
// through the environment and are shown in the run header.
void log_network_settings() {
  for (auto& [k, v] : job_environment())
    if (k.starts_with("NCCL_") || k.starts_with("GLOO_") || k.starts_with("TORCH_NCCL") ||
        k == "MASTER_ADDR" || k == "MASTER_PORT")
      spdlog::info("  {}={}", k, v);
}

std::string default_run_name(const strategies::Choice& choice, int world) {
  return fmt::format("{}-{}x-{}", choice.file_name(), world, local_timestamp());
}

// Threads each rank computes with: --threads, else the launcher's share,
// else LibTorch's default here (OMP_NUM_THREADS when set).
int threads_of(const train::TrainConfig& cfg, int launcher_share) {
  if (cfg.threads > 0) return static_cast<int>(cfg.threads);
  return launcher_share > 0 ? launcher_share : at::get_num_threads();
}

// Whatever would fail only at the end of the run, before anything starts:
// the files it reads and writes, the evaluation set.
void check_files(const train::TrainConfig& cfg, const JobOptions& o, bool writes_outputs) {
  preflight::check_input_files(cfg);
  preflight::check_vocab_fits_model(cfg);
  preflight::check_eval_set(cfg);
  if (writes_outputs) preflight::check_outputs({o.save_checkpoint, o.save_initial_checkpoint, o.dump_data});
}

// The files, and this node's resources: `ranks` run here, with `threads` each.
void check_before_start(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                        int ranks, int world, int threads, const std::string& ranks_flag, bool writes_outputs) {
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

// How a run that stopped on a signal ends: 128 + the signal, as a shell
// reports a process the signal ended (the results, if any, are written).
int interrupted_exit(int sig) { return 128 + (sig > 0 ? sig : SIGTERM); }

// `notice`: run.json's "interrupted" for a run a signal stopped.
void print_summary(const results::RunResult& r, const std::string& folder, const nlohmann::json& notice) {
  // Wrapped as the log lines are (core/text_wrap.h): results paths and the
  // strategy line can be wider than a terminal.
  std::string out;
  if (r.status == "interrupted" && !notice.empty()) {
    auto& i = notice;
    out += fmt::format("\n  INTERRUPTED by {} during {}: {} of {} steps done; the figures below are over those steps\n",
                       i.value("signal", std::string("a signal")), i.value("during", std::string("")), r.steps,
                       i.value("steps_planned", int64_t{0}));
  }
  out += fmt::format("\n  {} on {} x {} ({}), {} {}, seq {}, global batch {}\n", r.strategy, r.world_size,
                     r.device_name, r.device, r.model, r.precision, r.seq_length, r.global_batch);
  out += fmt::format("  Step time (median … p90 … max): {:8.2f} ms … {:8.2f} ms … {:8.2f} ms   (σ {:.2f} ms, {} timed steps)\n",
                     r.step_ms_median, r.step_ms_p90, r.step_ms_max, r.step_ms_stddev, r.timed_steps);
  out += fmt::format("  Throughput:  {:10.1f} samples/s  {:12.0f} tokens/s  {:8.1f} samples/s per device\n",
                     r.samples_per_s, r.tokens_per_s, r.samples_per_s_per_device);
  out += fmt::format("  Phases (median): data {:.2f} ms, forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms\n",
                     r.data_ms, r.forward_ms, r.backward_ms, r.optimizer_ms);
  if (r.mfu > 0)
    out += fmt::format("  MFU {:.1f}%{} of {} TFLOP/s\n", 100 * r.mfu,
                       r.activation_checkpointing ? fmt::format(" (HFU {:.1f}%, the recomputed forward counted)", 100 * r.hfu)
                                                  : "",
                       r.peak_tflops);
  out += fmt::format("  Peak memory {:.1f} MiB, model state {:.1f} MiB (memory model {:.1f} MiB); final loss {:.4f}\n",
                     r.peak_memory_bytes / 1048576.0, r.model_state_bytes / 1048576.0,
                     r.model_state_theory_bytes / 1048576.0, r.final_train_loss);
  if (r.utilisation_mean_percent >= 0)
    out += fmt::format("  Utilisation ({}) {:.1f}%{}\n", r.utilisation_of, r.utilisation_mean_percent,
                       r.energy_j >= 0 ? fmt::format(", power {:.1f} W, energy {:.1f} J ({}), {:.1f} samples/kJ", r.power_mean_w,
                                                     r.energy_j, r.energy_method, r.samples_per_kj)
                                       : "");
  if (r.val_loss >= 0) out += fmt::format("  Validation loss {:.4f}\n", r.val_loss);
  if (r.exact_match >= 0) out += fmt::format("  EM {:.2f}  F1 {:.2f}\n", r.exact_match, r.f1);
  out += fmt::format("  Results: {}\n", folder);
  fmt::print("{}", wrap_text(out, output_columns()));
}

// The timed loop N times as separate processes, one after the other, so that
// each repeat starts with a fresh allocator, caches and thread pools; every
// repeat is its own run folder <group>-r<i> with the shared repeat_group.
int run_repeats(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o) {
  auto layout = dist::detect_layout();
  if (layout.world_size > 1)
    fail("--repeats {}: this process is one of {} ranks of a launched job; repeat the job instead "
         "(`hpcbench sweep --repeats N` submits N jobs per configuration)",
         o.repeats, layout.world_size);
  std::string group = cfg.run_name.empty()
                          ? default_run_name(choice, o.nproc_per_node > 0 ? o.nproc_per_node : 1)
                          : cfg.run_name;
  auto base = strip_flag(own_arguments(), "--repeats");
  // A stop signal is passed to the repeat running now, which writes what it
  // measured with status interrupted; the repeats after it are not started.
  // A second one ends that repeat at once (run_self_passing_stop).
  install_stop_handlers(/*second_kills=*/false);
  std::vector<std::string> failed;
  for (int64_t i = 1; i <= o.repeats; ++i) {
    if (int sig = stop_signal()) {
      spdlog::warn("--repeats {}: stopped on {} before repeat {} of {}; the {} repeat(s) from it on were not run",
                   o.repeats, signal_name(sig), i, group, o.repeats - i + 1);
      return interrupted_exit(sig);
    }
    spdlog::info("repeat {}/{} of {}", i, o.repeats, group);
    auto child = base;
    for (auto& a : {std::string("--run-name"), fmt::format("{}-r{}", group, i), std::string("--repeat-group"),
                    group, std::string("--repeat-index"), std::to_string(i)})
      child.push_back(a);
    int rc = run_self_passing_stop(child);
    const bool child_stopped = rc == 128 + SIGTERM || rc == 128 + SIGINT || rc == 128 + SIGUSR1;
    const int sig = stop_signal() ? stop_signal() : (child_stopped ? rc - 128 : 0);
    if (sig) {
      spdlog::warn("--repeats {}: repeat {} of {} stopped on {}; the {} repeat(s) after it were not run", o.repeats, i,
                   group, signal_name(sig), o.repeats - i);
      return interrupted_exit(sig);
    }
    if (rc != 0) {
      spdlog::error("repeat {}/{} of {} failed (exit {})", i, o.repeats, group, rc);
      failed.push_back(std::to_string(i));
    }
  }
  if (!failed.empty())
    fail("--repeats {}: repeat(s) {} of {} failed; see the log above", o.repeats, fmt::join(failed, ", "), group);
  fmt::print("{}", wrap_text(fmt::format("\n  {} repeats of {} in {}/{}-r1 ... -r{}; compare them with `hpcbench report {}`\n",
                                        o.repeats, group, cfg.results_dir, group, o.repeats, cfg.results_dir)));
  return 0;
}

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

// What the job's flags decide, checked before anything starts.
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
  if (o.repeats < 1) fail("--repeats {}: must be at least 1", o.repeats);
}

// --nproc-per-node: this machine's ranks, started by the built-in launcher
// once what they would all check is checked here.
int launch_ranks(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o) {
  if (o.dry_run) preflight::check_folder_writable("--results-dir", cfg.results_dir);
  else results::check_results_dir(cfg.results_dir);
  dist::LaunchOptions launch{.nproc = o.nproc_per_node};
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

// This rank's place in the job: its communicator (when the job has several
// ranks or the strategy communicates at one), the job's hosts, and the job
// laid out in the log.
RunContext rank_context(const dist::RankLayout& layout, const train::TrainConfig& cfg, const strategies::Choice& choice,
                        const JobOptions& o) {
  RunContext ctx;
  if (layout.world_size <= 1 && !choice.spec().traits().needs_comm) return ctx;
  dist::CommOptions copts;
  copts.elide_single_rank = !o.keep_collectives;
  copts.backend = o.backend;
  copts.allow_shared_device = o.allow_shared_gpu;
  copts.timeout = std::chrono::milliseconds(static_cast<long long>(o.collective_timeout_s * 1000));
  copts.connect_timeout = std::chrono::milliseconds(static_cast<long long>(o.connect_timeout_s * 1000));
  ctx.comm = std::make_shared<dist::Comm>(layout, dist::select_device(cfg.device, layout, o.allow_shared_gpu), copts);
  ctx.rank = layout.rank;
  ctx.world_size = layout.world_size;
  ctx.local_rank = layout.local_rank;
  ctx.nodes = layout.num_nodes;
  ctx.gpus_per_node = layout.local_world_size;
  // A rank's host is SLURM's name for its node where there is one: on a
  // cluster it is the host name anyway, and on a test cluster of several
  // slurmd on one machine it is what tells the ranks' nodes apart.
  const char* node = std::getenv("SLURMD_NODENAME");
  std::string host = node && *node ? node : hostname();
  auto all = ctx.comm->exchange("run/host", host + "\t" + ctx.comm->device().str() + "\t" +
                                                std::to_string(::getpid()));
  std::string hosts;
  for (auto& h : all) hosts += (hosts.empty() ? "" : " ") + h.substr(0, h.find('\t'));
  ctx.hosts = hosts;
  if (const char* job = std::getenv("SLURM_JOB_ID")) ctx.slurm_job_id = job;
  if (ctx.rank == 0) {
    spdlog::info("job: {}; backend {}, collective timeout {} s", dist::describe(layout), ctx.comm->backend_name(),
                 o.collective_timeout_s);
    for (size_t r = 0; r < all.size(); ++r) {
      auto a = all[r].find('\t'), b = all[r].rfind('\t');
      spdlog::info("  rank {:>3}  host {:<16} device {:<8} pid {}", r, all[r].substr(0, a),
                   all[r].substr(a + 1, b - a - 1), all[r].substr(b + 1));
    }
    log_network_settings();
  }
  return ctx;
}

// Rank 0's results folder, and the summary on the terminal. Returns the
// process's exit status.
int write_results(const train::TrainConfig& cfg, const std::string& name, const JobOptions& o, TrainOutput out,
                  const dist::StepStop& stop, const RunContext& ctx, const TrainHooks& hooks) {
  const bool interrupted = out.result.status == "interrupted";
  const int sig = stop.signal();
  out.result.cpu_cores = preflight::node_cores();
  out.result.threads_per_rank = at::get_num_threads();
  if (interrupted) {
    const int64_t planned = out.details.value("steps_planned", int64_t{0});
    out.details["interrupted"] = {{"signal", signal_name(sig)},
                                  {"requested_by_rank", stop.requested_by()},
                                  {"steps_done", out.result.steps},
                                  {"steps_planned", planned},
                                  {"during", out.result.steps < planned ? "training" : "evaluation"}};
  }
  out.result.repeat_group = o.repeat_group;
  out.result.repeat_index = o.repeat_index;
  results::RunFiles files(out.result);
  files.steps = std::move(out.steps);
  files.rank_timing = std::move(out.rank_timing);
  if (out.details.contains("predictions")) files.files["predictions.json"] = out.details["predictions"].dump(1);
  out.details.erase("predictions");
  const nlohmann::json notice = out.details.value("interrupted", nlohmann::json::object());
  files.details = std::move(out.details);
  if (!out.utilisation_csv.empty()) files.files["utilisation.csv"] = out.utilisation_csv;
  // What was measured reaches the terminal even when the folder cannot be
  // written (a disk full beyond the space set aside, a folder removed).
  std::string folder_text, write_error;
  try {
    for (auto& [file, content] : tensorboard::event_files(hooks.tensorboard_dir)) files.files[file] = content;
    folder_text = results::write_run_folder(cfg.results_dir, name, std::move(files)).string();
    tensorboard::discard_event_files(hooks.tensorboard_dir);
  } catch (const UserError& e) {
    write_error = e.what();
    folder_text = "NOT WRITTEN (" + write_error + ")";
  }
  print_summary(out.result, folder_text, notice);
  if (!write_error.empty()) {
    spdlog::error("the run's results could not be written: {}; the summary above is what it measured", write_error);
    if (interrupted && ctx.comm) ctx.comm->barrier();
    return 2;
  }
  const std::string folder = folder_text;
  if (!interrupted) return 0;
  spdlog::warn("interrupted by {} after {} of {} steps{}: {} holds what was measured, with status interrupted "
               "(hpcbench report shows it and leaves it out of speedups unless --include-interrupted)",
               signal_name(sig), out.result.steps, notice["steps_planned"].get<int64_t>(),
               notice["during"] == "evaluation" ? ", during evaluation" : "", folder);
  if (ctx.comm) ctx.comm->barrier();
  return interrupted_exit(sig);
}

}  // namespace

int run_job(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o) {
  // Caught from the start, not only once the run is ready: SLURM sends the
  // --signal at once when the limit is short, and a stop that comes during
  // the checks, the data's loading or the rendezvous is an interruption
  // like any other, not a death by signal.
  install_stop_handlers(second_signal_kills());
  check_options(cfg, choice, o);
  if (o.repeats > 1 && !o.dry_run) {
    results::check_results_dir(cfg.results_dir);
    return run_repeats(cfg, choice, o);
  }
  if (o.nproc_per_node > 0) return launch_ranks(cfg, choice, o);

  auto layout = dist::detect_layout();
  if (o.dry_run) {
    // The job's nodes are not this one (a sweep checks on the login node):
    // what this command line decides is checked, not this node's resources.
    preflight::check_folder_writable("--results-dir", cfg.results_dir);
    check_files(cfg, o, true);
    return dry_run_done();
  }
  // A time limit (SLURM's SIGTERM, or the --signal asked for ahead of it),
  // scancel or Ctrl-C stops the run at its next step boundary with what it
  // measured. Under a launcher or SLURM a second signal is the launcher's
  // or the time limit's own business; alone, a second Ctrl-C ends it.
  install_stop_handlers(second_signal_kills());
  if (layout.rank == 0) {
    results::check_results_dir(cfg.results_dir);
    results::reserve_results_space(cfg.results_dir,
                                   results::results_space_estimate(cfg.max_steps, !cfg.eval_data.empty(),
                                                                   cfg.tensorboard == "on"));
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
  RunContext ctx = rank_context(layout, cfg, choice, o);
  if (auto device = ctx.comm ? ctx.comm->device() : resolve_device(cfg.device, layout.local_rank); !device.is_cpu()) {
    auto d = describe(device);
    preflight::check_device_memory(cfg, choice, layout.world_size, layout.local_world_size, d.total_memory, d.name);
  }
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
  return write_results(cfg, name, o, std::move(out), stop, ctx, hooks);
}

}  // namespace hpcbench::run
