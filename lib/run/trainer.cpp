#include "run/trainer.h"

#include <cstdlib>
#include <optional>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/hostinfo.h"
#include "device/device.h"
#include "model/checkpoint.h"
#include "monitor/job_sampling.h"
#include "monitor/nvtx.h"
#include "run/build.h"
#include "run/evaluate.h"
#include "run/loop.h"
#include "run/result.h"
#include "run/summary.h"
#include "tensorboard/run_log.h"

namespace hpcbench::run {

namespace {

// The node's first rank samples its ranks' GPUs (a GPU run, or a library
// named by HPCBENCH_NVML_LIBRARY) and, on CPU runs, their process trees.
monitor::JobSamplingOptions sampling_options(const Run& run, const RunContext& ctx) {
  monitor::JobSamplingOptions o;
  o.interval_ms = run.cfg.sample_ms;
  const char* nvml_override = std::getenv("HPCBENCH_NVML_LIBRARY");
  o.gpus = !run.device.is_cpu() || (nvml_override && *nvml_override);
  o.cpu_ranks = run.device.is_cpu();
  o.bus_id = device_bus_id(run.device);
  o.rank = ctx.rank;
  o.local_rank = ctx.local_rank;
  o.hosts = ctx.host_list();
  return o;
}

SampleOrder sample_order(const Run& run, const Steps& steps) {
  return {run.data.get(), run.cfg.seed, run.topology.data_ranks, run.batch.micro_rows, run.batch.grad_accum,
          steps.origin};
}

// The final checkpoint is optional beside the results: one that cannot be
// written (a disk that others filled since the check) is said in the
// results, which are still written; "" when it was written or not asked for.
std::string save_final_checkpoint(const Run& run, const std::filesystem::path& file) {
  if (file.empty()) return {};
  try {
    model::save_checkpoint(*run.model, file);
  } catch (const UserError& e) {
    spdlog::error("--save-checkpoint {}: not written: {}; the results are written all the same", file.string(),
                  e.what());
    return e.what();
  }
  return {};
}

// --tunableop's record in run.json and, where it tuned, its results file
// beside it: this rank's choices (the results folder is rank 0's).
void record_tunableop(const train::GemmTuningRecord& t, TrainOutput& out) {
  nlohmann::json j = {{"requested", true}, {"on", t.on}};
  if (t.on) {
    j["tuned_steps"] = train::kTunedSteps;
    j["gemms"] = t.gemms;
    j["chosen"] = t.chosen;
    j["file"] = train::kTunableOpFile;
    out.files[train::kTunableOpFile] = t.results;
  } else {
    j["reason"] = t.reason;
  }
  out.details["tunableop"] = std::move(j);
}

}  // namespace

TrainOutput train(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx,
                  const TrainHooks& hooks) {
  auto run = build(cfg, choice, ctx);
  auto& updater = *run.updater;
  const bool leader = ctx.rank == 0;
  if (!hooks.initial_checkpoint.empty()) {
    updater.gather_whole();  // collective where parameters are partitioned: every rank
    if (leader) model::save_checkpoint(*run.model, hooks.initial_checkpoint);
  }
  // Sampled from here to the end of evaluation; stops (joins its thread)
  // whichever way train() ends.
  monitor::JobSampling sampling(sampling_options(run, ctx),
                                [&ctx](const std::string& key, const std::string& mine) { return ctx.exchange(key, mine); });
  tensorboard::RunLog tb({.dir = leader ? hooks.tensorboard_dir : std::filesystem::path(),
                          .global_batch = run.batch.global_batch, .settings = run.settings,
                          .sampler = sampling.sampler(), .host = hostname(), .several_nodes = ctx.nodes > 1,
                          .flush_secs = 2});

  auto steps = train_steps(run, ctx, {hooks, sampling, tb});
  if (steps.stopped && steps.records.empty()) {
    // Stopped before its first step (every rank at the same boundary): no
    // figure exists, and the job writes no results folder.
    JobSteps none;
    none.stopped = true;
    TrainOutput out;
    out.result = run_result(run, ctx, none, nullptr, nullptr);
    return out;
  }
  if (leader && hooks.after_training) hooks.after_training(sample_order(run, steps));
  auto profile = std::move(steps.profile);
  auto tunableop = std::move(steps.tunableop);
  auto job = combine_ranks(run, ctx, std::move(steps));

  // Whole parameters on every rank before the checkpoint and evaluation.
  updater.gather_whole();
  const std::string checkpoint_error = leader ? save_final_checkpoint(run, hooks.final_checkpoint) : "";
  std::optional<Evaluation> evaluation;
  if (!cfg.eval_data.empty() && !job.stopped) {
    sampling.set_step(monitor::kEvaluation);
    monitor::nvtx::Scope range(!run.device.is_cpu(), "evaluation");
    evaluation = evaluate(run, ctx);
    sampling.set_step(monitor::kDone);
  }
  auto sampled = sampling.finish(job.timed_from + 1, static_cast<int64_t>(job.steps.size()));
  auto out = summarise(run, ctx, std::move(job), evaluation, sampled);
  if (!checkpoint_error.empty())
    out.details["final_checkpoint"] = {
        {"path", hooks.final_checkpoint.string()}, {"written", false}, {"error", checkpoint_error}};
  tb.finish(out.steps, out.result, out.utilisation_csv);
  if (!profile.summary.is_null()) out.details["profile"] = std::move(profile.summary);
  out.files = std::move(profile.files);
  if (tunableop.requested) record_tunableop(tunableop, out);
  return out;
}

}  // namespace hpcbench::run
