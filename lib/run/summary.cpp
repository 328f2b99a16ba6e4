#include "run/summary.h"

#include <ATen/Parallel.h>

#include "core/hostinfo.h"
#include "model/bert_modules.h"
#include "run/result.h"
#include "train/determinism.h"

namespace hpcbench::run {

namespace {

// run.json's sections besides the record: the settings, the environment, the
// job's per-rank figures, evaluation and the sampler's.
nlohmann::json details_of(const Run& run, const JobSteps& job, const std::optional<Evaluation>& evaluation,
                          const monitor::JobSampling::Job& sampled) {
  nlohmann::json d;
  d["config"] = nlohmann::json::object();
  for (auto& [k, v] : run.settings) d["config"][k] = v;
  auto& env = d["environment"];
  env["host"] = hostname();
  env["device"] = run.device.str();
  env["device_name"] = run.device_description.name;
  env["intra_op_threads"] = at::get_num_threads();
  env["hardware_threads"] = hardware_threads();
  for (auto& [k, v] : job_environment()) d["environment"]["variables"][k] = v;
  d["timing_warmup_steps_excluded"] = job.timed_from;
  d["steps_planned"] = job.steps_planned;
  d["devices_per_process"] = run.topology.devices;
  if (!job.rank_median_ms.empty()) d["rank_step_ms_median"] = job.rank_median_ms;
  d["rank_model_state_bytes"] = job.rank_state_bytes;
  d["rank_peak_memory_bytes"] = job.rank_peak_bytes;
  // Which attention kernel the timed steps ran: the GPU comparisons with
  // Hugging Face name it on both sides (a padded batch cannot take flash).
  d["sdpa_backend"] = model::sdpa_backend_used();
  // What the kernels ran under, read back from ATen (--deterministic).
  const auto det = train::determinism_state();
  d["deterministic"] = {{"algorithms", det.algorithms},
                        {"warn_only", det.warn_only},
                        {"cudnn_deterministic", det.cudnn_deterministic},
                        {"cudnn_benchmark", det.cudnn_benchmark},
                        {"cublas_workspace_config", det.cublas_workspace_config}};
  if (evaluation && !evaluation->details.is_null()) d["evaluation"] = evaluation->details;
  if (evaluation && !evaluation->predictions.is_null()) d["predictions"] = evaluation->predictions;
  if (!sampled.details.is_null()) d["monitor"] = sampled.details;
  return d;
}

}  // namespace

TrainOutput summarise(const Run& run, const RunContext& ctx, JobSteps job, const std::optional<Evaluation>& evaluation,
                      const monitor::JobSampling::Job& sampled) {
  TrainOutput out;
  out.result = run_result(run, ctx, job, evaluation ? &*evaluation : nullptr,
                          sampled.details.is_null() ? nullptr : &sampled.summary);
  out.details = details_of(run, job, evaluation, sampled);
  out.utilisation_csv = sampled.utilisation_csv;
  out.steps = std::move(job.steps);
  out.rank_timing = std::move(job.rank_timing);
  return out;
}

}  // namespace hpcbench::run
