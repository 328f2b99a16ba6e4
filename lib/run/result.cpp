#include "run/result.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/hostinfo.h"
#include "core/version.h"
#include "stats/stats.h"
#include "stats/steps.h"

namespace hpcbench::run {

namespace {

using results::Phase;
using results::RunResult;
using results::StepRecord;

// Who ran it, where and on what: what results are grouped and told apart by.
void fill_identity(RunResult& res, const Run& run, const RunContext& ctx) {
  const auto& cfg = run.cfg;
  const auto& topo = run.topology;
  res.started_at = run.started_at;
  res.hpcbench_version = version();
  res.git_commit = git_commit();
  res.hosts = ctx.hosts.empty() ? hostname() : ctx.hosts;
  res.slurm_job_id = ctx.slurm_job_id;
  res.repeat_group = ctx.repeat_group;
  res.repeat_index = ctx.repeat_index;
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
  res.batch_per_device = run.batch.per_device;
  res.global_batch = run.batch.global_batch;
  res.grad_accum = run.batch.grad_accum;
  res.data = run.data_identity;
  res.activation_checkpointing = cfg.activation_checkpointing ? 1 : 0;
  res.fused = run.engine.fused_model() ? 1 : 0;
  res.engine = run.engine.name();
  res.engine_reason = run.engine.reason;
  res.cpu_cores = run.cpu_cores;
  res.threads_per_rank = run.threads_per_rank;
}

double median_of(const std::vector<StepRecord>& steps, int64_t from, double (*pick)(const StepRecord&)) {
  std::vector<double> v;
  for (size_t i = static_cast<size_t>(from); i < steps.size(); ++i) v.push_back(pick(steps[i]));
  return stats::summarize(v).median;
}

// The timed steps' time, throughput and phases (the warm-up left out).
void fill_timing(RunResult& res, const Run& run, const RunContext& ctx, const JobSteps& job) {
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
  res.steps = static_cast<int64_t>(records.size());
  res.timed_steps = static_cast<int64_t>(st.n);
  res.samples_timed = samples_timed;
  res.train_time_s = st.mean * static_cast<double>(st.n) / 1000.0;
  res.wall_time_s = job.wall_s;
  res.samples_per_s = res.train_time_s > 0 ? static_cast<double>(res.samples_timed) / res.train_time_s : 0;
  res.samples_per_s_per_device = res.samples_per_s / static_cast<double>(run.devices_total(ctx));
  res.tokens_per_s = res.samples_per_s * static_cast<double>(run.cfg.max_seq_length);
  res.step_ms_median = st.median;
  res.step_ms_p90 = st.p90;
  res.step_ms_max = st.max;
  res.step_ms_mean = st.mean;
  res.step_ms_stddev = st.stddev;
  const auto robust = stats::step_figures(step_ms);
  res.step_ms_min = robust.min;
  res.step_ms_iqr = robust.iqr();
  res.step_outliers = static_cast<int64_t>(robust.outliers.size());
  // By the step's own number (from 1, the warm-up's included).
  const long first = static_cast<size_t>(from) < records.size() ? static_cast<long>(records[static_cast<size_t>(from)].step)
                                                                 : static_cast<long>(from) + 1;
  res.step_outlier_steps = stats::outlier_text(step_ms, robust, first);
  res.data_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Data)]; });
  res.forward_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Forward)]; });
  res.backward_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Backward)]; });
  res.optimizer_ms = median_of(records, from, [](auto& r) { return r.times.phase_ms[size_t(Phase::Optimizer)]; });
  res.comm_ms = median_of(records, from, [](auto& r) { return r.times.comm_ms; });
  res.comm_exposed_ms = median_of(records, from, [](auto& r) { return r.times.comm_exposed_ms; });
  res.comm_untimed = comm_untimed;
  if (comm_untimed > 0)
    spdlog::warn("{} collective(s) of the timed steps could not be timed on rank {} and are missing from comm_ms "
                 "(comm_untimed in the results)", comm_untimed, ctx.rank);
}

// What the timed steps made of the hardware (MFU, HFU), of memory, and the
// engine they ran on; the pipeline's bubble.
void fill_efficiency(RunResult& res, const Run& run, const JobSteps& job) {
  const auto& records = job.steps;
  const auto& topo = run.topology;
  if (topo.bubble_theory >= 0) {
    std::vector<double> bubble;
    for (size_t i = static_cast<size_t>(job.timed_from); i < records.size(); ++i)
      if (records[i].bubble >= 0) bubble.push_back(records[i].bubble);
    res.bubble_fraction = bubble.empty() ? -1 : stats::summarize(bubble).median;
    res.bubble_theory = topo.bubble_theory;
  }
  res.flops_per_sample = run.flops_per_sample;
  res.tflops_per_device = res.samples_per_s_per_device * run.flops_per_sample / 1e12;
  res.peak_tflops = run.peak_tflops;
  res.mfu = run.peak_tflops > 0 ? res.tflops_per_device / run.peak_tflops : 0;
  res.cuda_graph = !run.engine.graph() ? "off" : job.cuda_graph;
  if (job.short_steps > 0) res.cuda_graph += fmt::format(", {} short steps outside", job.short_steps);
  res.hardware_flops_per_sample = run.hardware_flops_per_sample;
  res.hfu = run.peak_tflops > 0
                ? res.samples_per_s_per_device * run.hardware_flops_per_sample / 1e12 / run.peak_tflops
                : 0;
  res.peak_memory_bytes = *std::max_element(job.rank_peak_bytes.begin(), job.rank_peak_bytes.end());
  if (!job.rank_allocated_bytes.empty())
    res.peak_allocated_bytes = *std::max_element(job.rank_allocated_bytes.begin(), job.rank_allocated_bytes.end());
  res.model_state_bytes = *std::max_element(job.rank_state_bytes.begin(), job.rank_state_bytes.end());
  res.model_state_theory_bytes = static_cast<int64_t>(topo.state_theory_bytes);
  res.final_train_loss = records.empty() ? 0 : records.back().loss;
}

void fill_evaluation(RunResult& res, const Evaluation& evaluation) {
  res.val_loss = evaluation.val_loss;
  res.exact_match = evaluation.exact_match;
  res.f1 = evaluation.f1;
  res.eval_load_s = evaluation.load_s;
  res.eval_forward_s = evaluation.forward_s;
  res.eval_postprocess_s = evaluation.postprocess_s;
  res.eval_metric_s = evaluation.metric_s;
}

void fill_sampling(RunResult& res, const monitor::Summary& s) {
  res.utilisation_of = s.util_of;
  res.utilisation_mean_percent = s.util_mean_percent;
  res.power_mean_w = s.power_mean_w;
  res.energy_j = s.energy_j;
  res.energy_method = s.energy_method;
  res.samples_per_kj = s.energy_j > 0 ? static_cast<double>(res.samples_timed) / (s.energy_j / 1000.0) : -1;
  res.nvml_peak_memory_bytes = s.nvml_peak_memory_bytes;
}

}  // namespace

RunResult run_result(const Run& run, const RunContext& ctx, const JobSteps& job, const Evaluation* evaluation,
                     const monitor::Summary* sampled) {
  RunResult res;
  fill_identity(res, run, ctx);
  if (job.stopped || (evaluation && evaluation->interrupted)) res.status = "interrupted";
  if (job.steps.empty()) return res;
  fill_timing(res, run, ctx, job);
  fill_efficiency(res, run, job);
  if (evaluation) fill_evaluation(res, *evaluation);
  if (sampled) fill_sampling(res, *sampled);
  return res;
}

}  // namespace hpcbench::run
