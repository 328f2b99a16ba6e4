#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <thread>

#include "commands.h"
#include "core/error.h"
#include "core/hostinfo.h"
#include "core/stop_signal.h"
#include "device/device.h"
#include "dist/launch_env.h"
#include "dist/local_launcher.h"
#include "dist/process_group.h"
#include "dist/step_stop.h"
#include "preflight/resources.h"
#include "preflight/run_inputs.h"
#include "report/run_folder.h"
#include "self_exec.h"
#include "strategies/strategy.h"
#include "tensorboard/run_log.h"
#include "train/config.h"
#include "train/names.h"
#include "train/trainer.h"

namespace hpcbench::cli {

namespace {

// What `hpcbench run` takes besides the settings table: how the job is laid
// out, strategy knobs, and files for tests and comparisons.
struct RunOptions {
  int nproc_per_node = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  double collective_timeout_s = 300;
  double connect_timeout_s = 120;
  // --keep-collectives: a strategy at world size 1 issues its collectives
  // anyway, so that one GPU runs NCCL (and the timing of collectives) for real.
  bool keep_collectives = false;
  std::string backend = "auto";
  bool allow_shared_gpu = false;
  strategies::StrategyOptions strategy;
  std::string save_checkpoint, save_initial_checkpoint, dump_data;
  // --repeats N: N child runs of the same command; each child is told its
  // group and index (--repeat-group, --repeat-index) and records them.
  int64_t repeats = 1;
  std::string repeat_group;
  int64_t repeat_index = 0;
  // --dry-run: every check a run makes before its first step, then exit.
  bool dry_run = false;
};

// HPCBENCH_TEST_FAULT=<rank>:<after>:<mode>: that rank fails after `after`
// optimizer steps (as for bench-comm), so that tests can check that a broken
// job ends promptly, names the rank and leaves no results: kill, abort,
// exit, hang, stop (SIGSTOP to itself); or term, SIGTERM to itself once, at
// a point a signal from outside cannot be timed to (after the last step,
// before evaluation).
std::function<void(int64_t)> fault_hook(int rank) {
  const char* spec = std::getenv("HPCBENCH_TEST_FAULT");
  if (!spec || !*spec) return {};
  int who = -1;
  long after = 0;
  char mode[16] = {0};
  if (std::sscanf(spec, "%d:%ld:%15s", &who, &after, mode) != 3)
    fail("HPCBENCH_TEST_FAULT='{}': expected <rank>:<after>:<kill|abort|exit|hang|stop|term>", spec);
  if (who != rank) return {};
  return [who, after, m = std::string(mode), fired = false](int64_t step) mutable {
    if (step < after || fired) return;
    fired = true;
    std::fflush(stdout);
    std::fprintf(stderr, "HPCBENCH_TEST_FAULT: rank %d goes '%s' after %ld steps\n", who, m.c_str(), after);
    std::fflush(stderr);
    if (m == "term") {
      ::kill(::getpid(), SIGTERM);
      return;
    }
    if (m == "stop") ::raise(SIGSTOP);
    if (m == "kill") ::kill(::getpid(), SIGKILL);
    if (m == "abort") std::abort();
    if (m == "exit") std::_Exit(3);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  };
}

// Threads each rank computes with: --threads, else the launcher's share,
// else LibTorch's default here (OMP_NUM_THREADS when set).
int threads_of(const train::TrainConfig& cfg, int launcher_share) {
  if (cfg.threads > 0) return static_cast<int>(cfg.threads);
  return launcher_share > 0 ? launcher_share : at::get_num_threads();
}

// Whatever would fail only at the end of the run, before anything starts:
// the files it reads and writes, the evaluation set.
void check_files(const train::TrainConfig& cfg, const RunOptions& o, bool writes_outputs) {
  preflight::check_input_files(cfg);
  preflight::check_vocab_fits_model(cfg);
  preflight::check_eval_set(cfg);
  if (writes_outputs) preflight::check_outputs({o.save_checkpoint, o.save_initial_checkpoint, o.dump_data});
}

// The files, and this node's resources: `ranks` run here, with `threads` each.
void check_before_start(const train::TrainConfig& cfg, const RunOptions& o, int ranks, int world, int threads,
                        const std::string& ranks_flag, bool writes_outputs) {
  check_files(cfg, o, writes_outputs);
  if (auto w = preflight::core_warning(ranks, threads, preflight::node_cores(), ranks_flag); !w.empty())
    spdlog::warn("{}", w);
  bool accel = cfg.device != "cpu" && (cfg.device != "auto" || accelerator_count() > 0);
  preflight::check_memory(cfg, o.strategy, ranks, world, accel, ranks_flag);
}

int dry_run_done() {
  fmt::print("hpcbench run --dry-run: the flags, the files the run reads and writes, the evaluation set, the cores "
             "and the memory check out; nothing was run\n");
  return 0;
}

// How a run that stopped on a signal ends: 128 + the signal, as a shell
// reports a process the signal ended (the results, if any, are written).
int interrupted_exit(int sig) { return 128 + (sig > 0 ? sig : SIGTERM); }

// The variables that steer NCCL and the sockets; they reach every rank
// through the environment and are shown in the run header.
void log_network_settings() {
  for (auto& [k, v] : job_environment())
    if (k.starts_with("NCCL_") || k.starts_with("GLOO_") || k.starts_with("TORCH_NCCL") ||
        k == "MASTER_ADDR" || k == "MASTER_PORT")
      spdlog::info("  {}={}", k, v);
}

std::string default_run_name(const train::TrainConfig& cfg, int world) {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return fmt::format("{}-{}x-{}", cfg.strategy, world, buf);
}

void print_summary(const report::RunResult& r, const std::string& folder, const nlohmann::json& details) {
  if (r.status == "interrupted" && details.contains("interrupted")) {
    auto& i = details["interrupted"];
    fmt::print("\n  INTERRUPTED by {} during {}: {} of {} steps done; the figures below are over those steps\n",
               i.value("signal", std::string("a signal")), i.value("during", std::string("")), r.steps,
               i.value("steps_planned", int64_t{0}));
  }
  fmt::print("\n  {} on {} x {} ({}), {} {}, seq {}, global batch {}\n", r.strategy, r.world_size,
             r.device_name, r.device, r.model, r.precision, r.seq_length, r.global_batch);
  fmt::print("  Step time (median … p90 … max): {:8.2f} ms … {:8.2f} ms … {:8.2f} ms   (σ {:.2f} ms, {} timed steps)\n",
             r.step_ms_median, r.step_ms_p90, r.step_ms_max, r.step_ms_stddev, r.timed_steps);
  fmt::print("  Throughput:  {:10.1f} samples/s  {:12.0f} tokens/s  {:8.1f} samples/s per device\n",
             r.samples_per_s, r.tokens_per_s, r.samples_per_s_per_device);
  fmt::print("  Phases (median): data {:.2f} ms, forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms\n",
             r.data_ms, r.forward_ms, r.backward_ms, r.optimizer_ms);
  if (r.mfu > 0) fmt::print("  MFU {:.1f}% of {} TFLOP/s\n", 100 * r.mfu, r.peak_tflops);
  fmt::print("  Peak memory {:.1f} MiB, model state {:.1f} MiB (memory model {:.1f} MiB); final loss {:.4f}\n",
             r.peak_memory_bytes / 1048576.0, r.model_state_bytes / 1048576.0,
             r.model_state_theory_bytes / 1048576.0, r.final_train_loss);
  if (r.utilisation_mean_percent >= 0)
    fmt::print("  Utilisation ({}) {:.1f}%{}\n", r.utilisation_of, r.utilisation_mean_percent,
               r.energy_j >= 0 ? fmt::format(", power {:.1f} W, energy {:.1f} J ({}), {:.1f} samples/kJ", r.power_mean_w,
                                             r.energy_j, r.energy_method, r.samples_per_kj)
                               : "");
  if (r.val_loss >= 0) fmt::print("  Validation loss {:.4f}\n", r.val_loss);
  if (r.exact_match >= 0) fmt::print("  EM {:.2f}  F1 {:.2f}\n", r.exact_match, r.f1);
  fmt::print("  Results: {}\n", folder);
}

// The timed loop N times as separate processes, one after the other, so that
// each repeat starts with a fresh allocator, caches and thread pools; every
// repeat is its own run folder <group>-r<i> with the shared repeat_group.
int run_repeats(const train::TrainConfig& cfg, const RunOptions& o) {
  auto layout = dist::detect_layout();
  if (layout.world_size > 1)
    fail("--repeats {}: this process is one of {} ranks of a launched job; repeat the job instead "
         "(`hpcbench sweep --repeats N` submits N jobs per configuration)",
         o.repeats, layout.world_size);
  std::string group = cfg.run_name.empty()
                          ? default_run_name(cfg, o.nproc_per_node > 0 ? o.nproc_per_node : 1)
                          : cfg.run_name;
  std::vector<std::string> base;
  auto args = own_arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--repeats") {
      ++i;
      continue;
    }
    if (args[i].starts_with("--repeats=")) continue;
    base.push_back(args[i]);
  }
  std::vector<std::string> failed;
  // A stop signal reaches the repeat running now (same process group, or
  // SLURM's step), which writes what it measured; the repeats after it are
  // not started.
  install_stop_handlers(/*second_kills=*/true);
  for (int64_t i = 1; i <= o.repeats; ++i) {
    spdlog::info("repeat {}/{} of {}", i, o.repeats, group);
    auto child = base;
    for (auto& a : {std::string("--run-name"), fmt::format("{}-r{}", group, i), std::string("--repeat-group"),
                    group, std::string("--repeat-index"), std::to_string(i)})
      child.push_back(a);
    int rc = run_self(child);
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
  fmt::print("\n  {} repeats of {} in {}/{}-r1 ... -r{}; compare them with `hpcbench report {}`\n", o.repeats,
             group, cfg.results_dir, group, o.repeats, cfg.results_dir);
  return 0;
}

}  // namespace

int run_training(const train::TrainConfig& cfg, const RunOptions& o) {
  train::validate(cfg);
  if (!(o.collective_timeout_s > 0)) fail("--collective-timeout {}: must be positive", o.collective_timeout_s);
  if (!(o.connect_timeout_s > 0)) fail("--connect-timeout {}: must be positive", o.connect_timeout_s);
  if (o.backend != "auto" && o.backend != "nccl" && o.backend != "gloo")
    fail("--backend {}: unknown (use auto, nccl or gloo)", o.backend);
  if (o.keep_collectives && !strategies::needs_comm(cfg.strategy))
    fail("--keep-collectives applies to strategies that communicate (ddp, zero, fsdp), not {}", cfg.strategy);
  if (cfg.device == "cpu" && o.backend == "nccl") fail("--backend nccl needs --device cuda (NCCL runs on GPUs only)");
  if (o.allow_shared_gpu && o.backend != "gloo")
    fail("--allow-shared-gpu needs --backend gloo: NCCL refuses two ranks on one GPU (\"duplicate GPU\"), while "
         "Gloo stages CUDA tensors through host memory and lets ranks share it");
  auto strategy = strategies::make_strategy(cfg.strategy, o.strategy);
  // What would otherwise fail only when the results are written, after the
  // whole run: the name, and a results folder that can take it.
  if (!cfg.run_name.empty()) report::check_run_name(cfg.run_name);
  if (o.repeats < 1) fail("--repeats {}: must be at least 1", o.repeats);
  if (o.repeats > 1 && !o.dry_run) {
    report::check_results_dir(cfg.results_dir);
    return run_repeats(cfg, o);
  }
  if (o.nproc_per_node > 0) {
    if (o.dry_run) preflight::check_folder_writable("--results-dir", cfg.results_dir);
    else report::check_results_dir(cfg.results_dir);
    dist::LaunchOptions launch{.nproc = o.nproc_per_node};
    if (cfg.threads == 0) {
      launch.threads_per_rank = dist::threads_per_rank(dist::current_environment(), o.nproc_per_node,
                                                       at::get_num_threads());
      if (launch.threads_per_rank > 0)
        spdlog::info("{} ranks share this machine's {} intra-op threads: {} each (--threads to choose)",
                     o.nproc_per_node, at::get_num_threads(), launch.threads_per_rank);
    }
    check_before_start(cfg, o, o.nproc_per_node, o.nproc_per_node, threads_of(cfg, launch.threads_per_rank),
                       fmt::format("--nproc-per-node {}", o.nproc_per_node), true);
    if (o.dry_run) return dry_run_done();
    return dist::launch_local(launch);
  }

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
  install_stop_handlers(layout.world_size == 1 && !dist::launched_as_rank());
  if (layout.rank == 0) report::check_results_dir(cfg.results_dir);
  // Ranks of the built-in launcher: it checked all of this before it started them.
  if (!std::getenv("HPCBENCH_LAUNCHER_PID")) {
    const int threads = threads_of(cfg, 0);
    const std::string who = layout.world_size > 1
                                ? fmt::format("the job's {} rank(s) on this node", layout.local_world_size)
                                : (cfg.threads > 0 ? fmt::format("--threads {}", cfg.threads) : std::string("this run"));
    // One rank per node speaks for the node; rank 0 alone writes the files.
    if (layout.local_rank == 0)
      check_before_start(cfg, o, layout.local_world_size, layout.world_size, threads, who, layout.rank == 0);
    else
      preflight::check_eval_set(cfg);
  }
  bool accel = cfg.device != "cpu" && (cfg.device != "auto" || accelerator_count() > 0);
  dist::check_layout(layout, {.nodes = o.nodes, .gpus_per_node = o.gpus_per_node, .uses_accelerator = accel,
                              .visible_devices = accelerator_count(),
                              .bound_by_visible_devices = dist::one_visible_device_named(dist::current_environment()),
                              .shared_devices = o.allow_shared_gpu});
  train::RunContext ctx;
  if (layout.world_size > 1 || strategies::needs_comm(cfg.strategy)) {
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
      spdlog::info("job: {}; backend {}, collective timeout {} s", dist::describe(layout),
                   ctx.comm->backend_name(), o.collective_timeout_s);
      for (size_t r = 0; r < all.size(); ++r) {
        auto a = all[r].find('\t'), b = all[r].rfind('\t');
        spdlog::info("  rank {:>3}  host {:<16} device {:<8} pid {}", r, all[r].substr(0, a),
                     all[r].substr(a + 1, b - a - 1), all[r].substr(b + 1));
      }
      log_network_settings();
    }
  }
  if (auto device = ctx.comm ? ctx.comm->device() : resolve_device(cfg.device, layout.local_rank); !device.is_cpu()) {
    auto d = describe(device);
    preflight::check_device_memory(cfg, o.strategy, layout.world_size, layout.local_world_size, d.total_memory, d.name);
  }
  dist::StepStop stop(ctx.comm);
  train::TrainHooks hooks;
  hooks.stop_before = [&stop](int64_t done) { return stop.stop_here(done); };
  hooks.initial_checkpoint = o.save_initial_checkpoint;
  hooks.final_checkpoint = o.save_checkpoint;
  hooks.data_dump = o.dump_data;
  hooks.after_step = fault_hook(ctx.rank);
  // Named at the start: the TensorBoard log is written under it as the run goes.
  std::string name = cfg.run_name.empty() ? default_run_name(cfg, ctx.world_size) : cfg.run_name;
  if (cfg.tensorboard == "on") hooks.tensorboard_dir = tensorboard::live_dir(cfg.results_dir, name);
  auto out = train::train(cfg, *strategy, ctx, hooks);
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
  std::map<std::string, std::string> extra;
  if (out.details.contains("predictions")) extra["predictions.json"] = out.details["predictions"].dump(1);
  out.details.erase("predictions");
  if (!out.utilisation_csv.empty()) extra["utilisation.csv"] = out.utilisation_csv;
  for (auto& [file, content] : tensorboard::event_files(hooks.tensorboard_dir)) extra[file] = content;
  auto folder = report::write_run_folder(cfg.results_dir, name, out.result, out.details, extra);
  tensorboard::discard_event_files(hooks.tensorboard_dir);
  print_summary(out.result, folder.string(), out.details);
  if (interrupted) {
    spdlog::warn("interrupted by {} after {} of {} steps{}: {} holds what was measured, with status interrupted "
                 "(hpcbench report shows it and leaves it out of speedups unless --include-interrupted)",
                 signal_name(sig), out.result.steps, out.details["interrupted"]["steps_planned"].get<int64_t>(),
                 out.details["interrupted"]["during"] == "evaluation" ? ", during evaluation" : "", folder.string());
    if (ctx.comm) ctx.comm->barrier();
    return interrupted_exit(sig);
  }
  return 0;
}

int run_training(const train::TrainConfig& cfg) { return run_training(cfg, RunOptions{}); }

Action add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Timed BERT/SQuAD training under one strategy; writes a results folder");
  auto cfg = std::make_shared<train::TrainConfig>();
  auto config_file = std::make_shared<std::string>();
  auto values = std::make_shared<std::map<std::string, std::string>>();
  auto o = std::make_shared<RunOptions>();
  sub->add_option("--config", *config_file, "TOML file (see configs/); flags override it");
  sub->add_option("--nproc-per-node", o->nproc_per_node, "Start this many local ranks (built-in launcher)");
  sub->add_option("--nodes", o->nodes, "Expected number of nodes (checked against the job)");
  sub->add_option("--gpus-per-node", o->gpus_per_node, "Expected ranks (GPUs) per node (checked against the job)");
  sub->add_option("--collective-timeout", o->collective_timeout_s,
                  "Seconds one collective may take before the job is declared broken")->capture_default_str();
  sub->add_option("--connect-timeout", o->connect_timeout_s, "Seconds to wait for all ranks at the rendezvous")
      ->capture_default_str();
  sub->add_flag("--keep-collectives", o->keep_collectives,
                "ddp, zero, fsdp at world size 1: issue every collective anyway (one GPU then runs NCCL, its "
                "stream-ordered waits and its timing for real; the step's overhead against the baseline includes them)");
  sub->add_option("--backend", o->backend,
                  "Collectives' backend: auto (NCCL on GPUs, Gloo on CPUs), nccl or gloo (also with CUDA tensors, "
                  "staged through host memory)")
      ->capture_default_str();
  sub->add_flag("--allow-shared-gpu", o->allow_shared_gpu,
                "Let local ranks share GPUs (local rank modulo the visible GPUs); needs --backend gloo, since "
                "NCCL refuses two ranks on one GPU");
  sub->add_option("--bucket-mb", o->strategy.bucket_mb, "ddp: gradient bucket size in MB")->capture_default_str();
  sub->add_flag_function("--no-overlap", [o](int64_t) { o->strategy.overlap = false; },
                "ddp: all-reduce after backward instead of during it; zero, fsdp: finish each unit's gradient "
                "reduction before the next unit's backward");
  sub->add_option("--zero-stage", o->strategy.zero_stage, "zero: 1, 2 or 3 (DeepSpeed's stages)")
      ->capture_default_str();
  sub->add_option("--sharding", o->strategy.sharding,
                  "fsdp: full (FULL_SHARD), grad-op (SHARD_GRAD_OP) or hybrid (HYBRID_SHARD: shard in a node, "
                  "replicate across nodes)")
      ->capture_default_str();
  sub->add_option("--shard-group-size", o->strategy.shard_group_size,
                  "fsdp hybrid: ranks per shard group (default: the ranks of a node)");
  sub->add_flag_function("--no-prefetch", [o](int64_t) { o->strategy.prefetch = false; },
                         "zero 3, fsdp: gather each unit only when it runs (no all-gather during the previous "
                         "unit's compute)");
  sub->add_option("--reduce-dtype", o->strategy.reduce_dtype,
                  "zero, fsdp with --precision bf16/fp16: dtype of the gradient reduction, fp32, bf16 or fp16 "
                  "(default: the compute dtype)");
  sub->add_option("--dp-replicas", o->strategy.dp_replicas,
                  "dp: replicas one process drives (0: every GPU, or 2 on CPU)")->capture_default_str();
  sub->add_option("--save-checkpoint", o->save_checkpoint, "Write the final model here (rank 0; .safetensors or a folder)");
  sub->add_option("--save-initial-checkpoint", o->save_initial_checkpoint,
                  "Write the model every rank starts from here (rank 0)");
  sub->add_option("--dump-data", o->dump_data,
                  "Write the training features and every rank's sample order to this .safetensors (rank 0)");
  sub->add_option("--repeats", o->repeats,
                  "Run the timed loop this many times, each as a separate process and results folder "
                  "<run name>-r<i> with a shared repeat_group; `hpcbench report` groups them")
      ->capture_default_str();
  sub->add_option("--repeat-group", o->repeat_group, "Set by --repeats: the group recorded in the results")
      ->group("");
  sub->add_option("--repeat-index", o->repeat_index, "Set by --repeats: this repeat's index")->group("");
  sub->add_flag("--dry-run", o->dry_run,
                "Check the flags, the files the run reads and writes, the evaluation set, the cores and the "
                "memory, then exit without training (`hpcbench sweep` runs it for every job before submitting)");
  for (auto& s : train::settings_of(*cfg)) {
    // Flags are collected as text and applied after the TOML file, so that
    // the command line always wins, whatever the order of the arguments.
    // A setting given twice takes its last value, so that a job script's
    // defaults can be overridden by appending flags.
    sub->add_option_function<std::string>(
           s.flag, [values, flag = s.flag](const std::string& v) { (*values)[flag] = v; },
           s.help + " [" + s.key + "]")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        // Collected as text, but shown with the setting's own type.
        ->type_name(std::visit(
            [](auto* p) -> std::string {
              using T = std::remove_pointer_t<decltype(p)>;
              if constexpr (std::is_same_v<T, int64_t>) return "INT";
              else if constexpr (std::is_same_v<T, double>) return "FLOAT";
              else return "TEXT";
            },
            s.target));
  }
  return [cfg, config_file, values, o] {
    if (!config_file->empty()) train::load_toml(*cfg, *config_file);
    for (auto& s : train::settings_of(*cfg))
      if (auto it = values->find(s.flag); it != values->end()) train::set_from_string(s, it->second);
    train::resolve_names(*cfg);
    return run_training(*cfg, *o);
  };
}

}  // namespace hpcbench::cli
