#include "plan/verify.h"

#include <algorithm>
#include <map>

#include "core/engine_policy.h"
#include "core/error.h"

namespace hpcbench::plan {

namespace {

constexpr const char* kRecomputeFlag = "--activation-checkpointing";
// What plan sets for each job itself.
constexpr const char* kOwnFlags[] = {kRecomputeFlag, "--batch-size", "--grad-accum", "--precision"};

void rename(sweep::SweepJob& j, const std::string& name) {
  j.name = name;
  j.script = std::filesystem::path("jobs") / (name + ".sbatch");
  j.run_dir = std::filesystem::path("runs") / name;
  j.log = "logs/" + name + "-%j.out";
}

}  // namespace

std::vector<sweep::SweepJob> verify_jobs(const Result& result, const Request& request, int k,
                                         sweep::SweepOptions& opts) {
  if (k < 1) fail("--verify {}: must be at least 1 (the layouts the sweep runs beside the baseline)", k);
  std::vector<std::string> own(std::begin(kOwnFlags), std::end(kOwnFlags));
  // Where the engine was searched each job runs its own.
  if (request.engine_steps) own.insert(own.end(), {"--cuda-graph", "--fused", "--engine"});
  for (auto& a : opts.run_args)
    for (const auto& flag : own)
      if (a == flag || a.starts_with(flag + "="))
        fail("'{}' after '--': plan sets {} for each layout it verifies (--global-batch gives the batch, the "
             "baseline and the search the precision)", a, flag);
  const size_t n = std::min<size_t>(static_cast<size_t>(k), result.ranked.size());
  opts.strategies.clear();
  for (size_t i = 0; i < n; ++i) {
    auto label = result.ranked[i].candidate.choice.label();
    if (std::find(opts.strategies.begin(), opts.strategies.end(), label) == opts.strategies.end())
      opts.strategies.push_back(label);
  }
  opts.nodes = {request.shape.nodes};
  opts.gpus_per_node = {request.shape.gpus_per_node};
  // Each job's batch and accumulation are its own (extra_args below).
  opts.global_batch = 0;
  opts.repeats = 1;
  auto planned = sweep::plan_jobs(opts);
  std::map<std::string, sweep::SweepJob> by_label;
  for (auto& j : planned) by_label.emplace(j.strategy, j);
  // The reference: the global batch on one device, in the baseline's own
  // micro-batches where they divide it (one device rarely holds it whole).
  std::vector<sweep::SweepJob> jobs{planned.front()};
  const int64_t b = request.base.batch, g = request.global_batch;
  const bool in_baseline_batches = b > 0 && g % b == 0;
  jobs.front().extra_args = {"--batch-size", std::to_string(in_baseline_batches ? b : g), "--grad-accum",
                             std::to_string(in_baseline_batches ? g / b : 1), "--precision", request.base.precision};
  // `--engine eager`: the job runs exactly the flags given, not what auto
  // would turn on.
  if (request.engine_steps) {
    jobs.front().extra_args.insert(jobs.front().extra_args.end(), {"--engine", "eager"});
    for (const auto& f : request.base.engine.flags()) jobs.front().extra_args.push_back(f);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& c = result.ranked[i].candidate;
    auto j = by_label.at(c.choice.label());
    j.extra_args = {"--batch-size", std::to_string(c.micro()), "--grad-accum", std::to_string(c.accum),
                    "--precision", c.precision};
    std::string name = j.name;
    if (c.accum > 1) name += "-accum" + std::to_string(c.accum);
    if (c.precision != request.base.precision) name += "-" + c.precision;
    if (c.recompute) {
      name += "-recompute";
      j.extra_args.push_back(kRecomputeFlag);
    }
    if (!c.engine.empty()) j.extra_args.insert(j.extra_args.end(), {"--engine", "eager"});
    for (const auto& f : EnginePolicy::recorded(c.precision, false, c.engine).flags()) j.extra_args.push_back(f);
    if (!c.engine.empty() && c.engine != request.base.engine.name()) {
      std::string tag = c.engine;
      std::replace(tag.begin(), tag.end(), '+', '-');
      name += "-" + tag;
    }
    rename(j, name);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

results::PlanFile plan_record(const Result& result, const Request& request, const std::vector<sweep::SweepJob>& jobs,
                              const std::string& system_file) {
  results::PlanFile p;
  p.baseline = request.base.source;
  p.system = system_file;
  p.nodes = request.shape.nodes;
  p.gpus_per_node = request.shape.gpus_per_node;
  p.global_batch = request.global_batch;
  p.calibration_low = result.calibration.low;
  p.calibration_high = result.calibration.high;
  p.calibration_source = result.calibration.source;
  p.baseline_noise = request.baseline_noise;
  p.tie_threshold = result.tie_threshold;
  p.searched = result.space.enumerated;
  p.predicted = static_cast<int64_t>(result.ranked.size());
  // The reference's own prediction: the baseline's step for the whole
  // global batch on its one device (rank 0: not one of the ranked layouts).
  auto one = scaled_baseline(request.base, request.global_batch, false);
  auto ref = measured_step_interval(result.calibration, one.step_s);
  p.layouts.push_back({jobs.front().name, jobs.front().strategy, false, 0, 0, one.step_s * 1000, ref.low * 1000,
                       ref.high * 1000, static_cast<double>(request.global_batch) / one.step_s, 0});
  for (size_t i = 1; i < jobs.size(); ++i) {
    const auto& x = result.ranked[i - 1];
    p.layouts.push_back({jobs[i].name, jobs[i].strategy, x.candidate.recompute, x.rank, x.tie_group,
                         x.prediction.step_s * 1000, x.step.low * 1000, x.step.high * 1000, x.prediction.samples_per_s,
                         x.memory.total()});
  }
  return p;
}

sweep::Sweep write_verify_sweep(const sweep::SweepOptions& opts, std::vector<sweep::SweepJob> jobs,
                                const results::PlanFile& plan) {
  auto s = sweep::write_sweep(opts, std::move(jobs));
  results::write_plan_file(s.dir / "plan.json", plan);
  return s;
}

}  // namespace hpcbench::plan
