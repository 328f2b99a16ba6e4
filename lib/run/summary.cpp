#include "run/summary.h"

#include <spdlog/spdlog.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>

#include "core/hostinfo.h"
#include "core/version.h"
#include "distributed/process_group.h"
#include "model/bert_modules.h"
#include "run/rank_timing.h"
#include "stats/stats.h"
#include "train/setup.h"

namespace hpcbench::run {

namespace {

using results::Phase;
using results::kPhases;

// Every step's time becomes the slowest rank's, its loss the mean over the
// ranks whose loss counts and its bubble the mean over the ranks that
// measured one (a pipeline's stages); returns each rank's median step time
// (empty for one rank).
std::vector<double> combine_steps(std::vector<results::StepRecord>& records, const RunContext& ctx,
                                  bool computes_loss) {
  std::vector<double> rank_median_ms;
  if (!ctx.comm || ctx.world_size <= 1) return rank_median_ms;
  const auto steps = static_cast<int64_t>(records.size());
  // (step time, loss, whether this rank's loss counts, bubble, whether this
  // rank measured one) per step.
  constexpr int64_t k = 5;
  auto mine = at::empty({steps, k}, at::kDouble);
  for (int64_t i = 0; i < steps; ++i) {
    const auto& r = records[size_t(i)];
    mine[i][0] = r.times.ms;
    mine[i][1] = computes_loss ? r.loss : 0.0;
    mine[i][2] = computes_loss ? 1.0 : 0.0;
    mine[i][3] = r.bubble >= 0 ? r.bubble : 0.0;
    mine[i][4] = r.bubble >= 0 ? 1.0 : 0.0;
  }
  auto local = mine.to(ctx.comm->device());
  auto all = at::empty({ctx.world_size * steps * k}, local.options());
  ctx.comm->allgather(all, local.view({-1}));
  all = all.cpu().view({ctx.world_size, steps, k});
  auto slowest = std::get<0>(all.select(2, 0).max(0));
  auto mean_loss = all.select(2, 1).sum(0) / all.select(2, 2).sum(0).clamp_min(1.0);
  auto bubble_ranks = all.select(2, 4).sum(0);
  auto mean_bubble = all.select(2, 3).sum(0) / bubble_ranks.clamp_min(1.0);
  for (int64_t i = 0; i < steps; ++i) {
    records[size_t(i)].times.ms = slowest[i].item<double>();
    records[size_t(i)].loss = mean_loss[i].item<double>();
    records[size_t(i)].bubble = bubble_ranks[i].item<double>() > 0 ? mean_bubble[i].item<double>() : -1.0;
  }
  for (int r = 0; r < ctx.world_size; ++r) {
    auto v = all[r].select(1, 0);
    rank_median_ms.push_back(v.numel() ? v.median().item<double>() : 0);
  }
  return rank_median_ms;
}

// Every rank's model-state and peak memory bytes, rank order.
std::pair<std::vector<int64_t>, std::vector<int64_t>> memory_over_ranks(size_t state_bytes, size_t peak_bytes,
                                                                        const RunContext& ctx) {
  std::vector<int64_t> state{static_cast<int64_t>(state_bytes)}, peak{static_cast<int64_t>(peak_bytes)};
  if (!ctx.comm || ctx.world_size <= 1) return {state, peak};
  auto mine = at::tensor({static_cast<double>(state_bytes), static_cast<double>(peak_bytes)}, at::kDouble);
  auto local = mine.to(ctx.comm->device());
  auto all = at::empty({ctx.world_size * 2}, local.options());
  ctx.comm->allgather(all, local);
  all = all.cpu().view({ctx.world_size, 2});
  state.clear();
  peak.clear();
  for (int r = 0; r < ctx.world_size; ++r) {
    state.push_back(static_cast<int64_t>(all[r][0].item<double>()));
    peak.push_back(static_cast<int64_t>(all[r][1].item<double>()));
  }
  return {state, peak};
}

double median_of(const std::vector<results::StepRecord>& steps, int64_t from, double (*pick)(const results::StepRecord&)) {
  std::vector<double> v;
  for (size_t i = static_cast<size_t>(from); i < steps.size(); ++i) v.push_back(pick(steps[i]));
  return stats::summarize(v).median;
}

}  // namespace

JobSteps combine_ranks(const Run& run, const train::TrainConfig& cfg, const RunContext& ctx, Steps steps) {
  JobSteps job;
  // Figures over the timed steps only: the first steps pay for allocator
  // growth, kernel selection and cache warm-up, which a long run amortises.
  const auto n = static_cast<int64_t>(steps.records.size());
  job.timed_from = std::max<int64_t>(std::min<int64_t>(cfg.timing_warmup_steps, n - 1), 0);
  if (job.timed_from < cfg.timing_warmup_steps && ctx.rank == 0)
    spdlog::warn("only {} steps: {} excluded as timing warm-up instead of {}; run more steps (--max-steps) "
                 "for figures you can trust", n, job.timed_from, cfg.timing_warmup_steps);
  std::vector<results::StepTimes> own_timed;  // before the slowest rank's times replace this rank's
  for (size_t i = static_cast<size_t>(job.timed_from); i < steps.records.size(); ++i)
    own_timed.push_back(steps.records[i].times);
  job.rank_timing = rank_timing(own_timed, ctx);
  job.rank_median_ms = combine_steps(steps.records, ctx, run.topology.computes_loss);
  // Memory per rank: sharded ranks need not hold the same (padding, the
  // units a rank's partition cuts), and the job needs what the largest holds.
  std::tie(job.rank_state_bytes, job.rank_peak_bytes) =
      memory_over_ranks(steps.state_bytes, peak_memory_bytes(run.device), ctx);
  job.steps = std::move(steps.records);
  job.wall_s = steps.wall_s;
  job.steps_planned = run.total_steps;
  job.stopped = steps.stopped;
  job.cuda_graph = steps.cuda_graph;
  job.short_steps = steps.short_steps;
  return job;
}

TrainOutput summarise(const Run& run, const train::TrainConfig& cfg, const RunContext& ctx, JobSteps job,
                      const std::optional<Evaluation>& evaluation, const monitor::JobSampling::Job& sampled) {
  TrainOutput out;
  auto& res = out.result;
  const auto& records = job.steps;
  const int64_t from = job.timed_from;
  int64_t comm_untimed = 0, samples_timed = 0;
  std::vector<double> step_ms;
  for (size_t i = static_cast<size_t>(from); i < records.size(); ++i) {
    comm_untimed += records[i].times.comm_untimed;
    samples_timed += records[i].samples;
    step_ms.push_back(records[i].times.ms);
  }
  auto st = stats::summarize(step_ms);
  const auto& topo = run.topology;
  res.started_at = run.started_at;
  res.hpcbench_version = version();
  res.git_commit = git_commit();
  res.hosts = ctx.hosts.empty() ? hostname() : ctx.hosts;
  res.slurm_job_id = ctx.slurm_job_id;
  res.strategy = run.strategy_name;
  res.strategy_options = topo.options;
  res.nodes = ctx.nodes;
  res.gpus_per_node = ctx.gpus_per_node * topo.devices;
  res.world_size = ctx.world_size;
  res.device = c10::DeviceTypeName(run.device.type(), true);
  res.device_name = run.device_description.name;
  res.precision = cfg.precision;
  res.model = run.model_config.name;
  res.parameters = run.model_config.num_parameters();
  res.seq_length = cfg.max_seq_length;
  res.batch_per_device = cfg.batch_size;
  res.global_batch = run.global_batch;
  res.grad_accum = cfg.grad_accum;
  res.data = train::data_identity(cfg, run.data->size());
  res.steps = static_cast<int64_t>(records.size());
  res.timed_steps = static_cast<int64_t>(st.n);
  res.samples_timed = samples_timed;
  res.train_time_s = st.mean * static_cast<double>(st.n) / 1000.0;
  res.wall_time_s = job.wall_s;
  res.samples_per_s = res.train_time_s > 0 ? static_cast<double>(res.samples_timed) / res.train_time_s : 0;
  res.samples_per_s_per_device = res.samples_per_s / static_cast<double>(run.devices_total(ctx));
  res.tokens_per_s = res.samples_per_s * static_cast<double>(cfg.max_seq_length);
  res.step_ms_median = st.median;
  res.step_ms_p90 = st.p90;
  res.step_ms_max = st.max;
  res.step_ms_mean = st.mean;
  res.step_ms_stddev = st.stddev;
  res.data_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Data)]; });
  res.forward_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Forward)]; });
  res.backward_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Backward)]; });
  res.optimizer_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Optimizer)]; });
  res.comm_ms = median_of(records, from, [](auto& r) { return r.times.comm_ms; });
  res.comm_exposed_ms = median_of(records, from, [](auto& r) { return r.times.comm_exposed_ms; });
  res.comm_untimed = comm_untimed;
  if (topo.bubble_theory >= 0) {
    std::vector<double> bubble;
    for (size_t i = static_cast<size_t>(from); i < records.size(); ++i)
      if (records[i].bubble >= 0) bubble.push_back(records[i].bubble);
    res.bubble_fraction = bubble.empty() ? -1 : stats::summarize(bubble).median;
    res.bubble_theory = topo.bubble_theory;
  }
  if (comm_untimed > 0)
    spdlog::warn("{} collective(s) of the timed steps could not be timed on rank {} and are missing from comm_ms "
                 "(comm_untimed in the results)", comm_untimed, ctx.rank);
  res.flops_per_sample = run.flops_per_sample;
  res.tflops_per_device = res.samples_per_s_per_device * run.flops_per_sample / 1e12;
  res.peak_tflops = run.peak_tflops;
  res.mfu = run.peak_tflops > 0 ? res.tflops_per_device / run.peak_tflops : 0;
  res.activation_checkpointing = cfg.activation_checkpointing ? 1 : 0;
  res.cuda_graph = !cfg.cuda_graph ? "off" : job.cuda_graph;
  if (job.short_steps > 0) res.cuda_graph += fmt::format(", {} short steps outside", job.short_steps);
  res.fused = cfg.fused ? 1 : 0;
  res.hardware_flops_per_sample = run.hardware_flops_per_sample;
  res.hfu = run.peak_tflops > 0
                ? res.samples_per_s_per_device * run.hardware_flops_per_sample / 1e12 / run.peak_tflops
                : 0;
  res.peak_memory_bytes = *std::max_element(job.rank_peak_bytes.begin(), job.rank_peak_bytes.end());
  res.model_state_bytes = *std::max_element(job.rank_state_bytes.begin(), job.rank_state_bytes.end());
  res.model_state_theory_bytes = static_cast<int64_t>(topo.state_theory_bytes);
  res.final_train_loss = records.empty() ? 0 : records.back().loss;
  if (job.stopped || (evaluation && evaluation->interrupted)) res.status = "interrupted";
  if (evaluation) {
    res.val_loss = evaluation->val_loss;
    res.exact_match = evaluation->exact_match;
    res.f1 = evaluation->f1;
    res.eval_load_s = evaluation->load_s;
    res.eval_forward_s = evaluation->forward_s;
    res.eval_postprocess_s = evaluation->postprocess_s;
    res.eval_metric_s = evaluation->metric_s;
  }
  if (!sampled.details.is_null()) {
    const auto& job_s = sampled.summary;
    res.utilisation_of = job_s.util_of;
    res.utilisation_mean_percent = job_s.util_mean_percent;
    res.power_mean_w = job_s.power_mean_w;
    res.energy_j = job_s.energy_j;
    res.energy_method = job_s.energy_method;
    res.samples_per_kj = job_s.energy_j > 0 ? static_cast<double>(res.samples_timed) / (job_s.energy_j / 1000.0) : -1;
    res.nvml_peak_memory_bytes = job_s.nvml_peak_memory_bytes;
  }

  auto& d = out.details;
  d["config"] = nlohmann::json::object();
  for (auto& [k, v] : describe(cfg)) d["config"][k] = v;
  auto& env = d["environment"];
  env["host"] = hostname();
  env["device"] = run.device.str();
  env["device_name"] = run.device_description.name;
  env["intra_op_threads"] = at::get_num_threads();
  env["hardware_threads"] = hardware_threads();
  for (auto& [k, v] : job_environment()) d["environment"]["variables"][k] = v;
  d["timing_warmup_steps_excluded"] = from;
  d["steps_planned"] = job.steps_planned;
  d["devices_per_process"] = topo.devices;
  if (!job.rank_median_ms.empty()) d["rank_step_ms_median"] = job.rank_median_ms;
  d["rank_model_state_bytes"] = job.rank_state_bytes;
  d["rank_peak_memory_bytes"] = job.rank_peak_bytes;
  // Which attention kernel the timed steps ran: the GPU comparisons with
  // Hugging Face name it on both sides (a padded batch cannot take flash).
  d["sdpa_backend"] = model::sdpa_backend_used();
  if (evaluation && !evaluation->details.is_null()) d["evaluation"] = evaluation->details;
  if (evaluation && !evaluation->predictions.is_null()) d["predictions"] = evaluation->predictions;
  if (!sampled.details.is_null()) d["monitor"] = sampled.details;
  out.utilisation_csv = sampled.utilisation_csv;
  out.steps = std::move(job.steps);
  out.rank_timing = std::move(job.rank_timing);
  return out;
}

}  // namespace hpcbench::run
