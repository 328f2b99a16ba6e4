#include "run/combine.h"

#include <spdlog/spdlog.h>

#include <ATen/ATen.h>

#include <algorithm>

#include "device/device.h"
#include "distributed/process_group.h"
#include "run/rank_timing.h"

namespace hpcbench::run {

namespace {

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
// Each rank's model-state bytes, the peak its device held and the peak of
// its live tensors, in rank order.
std::vector<std::vector<int64_t>> memory_over_ranks(const std::vector<size_t>& mine, const RunContext& ctx) {
  const auto n = static_cast<int64_t>(mine.size());
  std::vector<std::vector<int64_t>> out(mine.size());
  if (!ctx.comm || ctx.world_size <= 1) {
    for (size_t k = 0; k < mine.size(); ++k) out[k] = {static_cast<int64_t>(mine[k])};
    return out;
  }
  std::vector<double> values(mine.begin(), mine.end());
  auto local = at::tensor(values, at::kDouble).to(ctx.comm->device());
  auto all = at::empty({ctx.world_size * n}, local.options());
  ctx.comm->allgather(all, local);
  all = all.cpu().view({ctx.world_size, n});
  for (int r = 0; r < ctx.world_size; ++r)
    for (int64_t k = 0; k < n; ++k) out[static_cast<size_t>(k)].push_back(static_cast<int64_t>(all[r][k].item<double>()));
  return out;
}

}  // namespace

JobSteps combine_ranks(const Run& run, const RunContext& ctx, Steps steps) {
  const auto& cfg = run.cfg;
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
  auto memory =
      memory_over_ranks({steps.state_bytes, peak_memory_bytes(run.device), peak_allocated_bytes(run.device)}, ctx);
  job.rank_state_bytes = std::move(memory[0]);
  job.rank_peak_bytes = std::move(memory[1]);
  job.rank_allocated_bytes = std::move(memory[2]);
  job.steps = std::move(steps.records);
  job.wall_s = steps.wall_s;
  job.steps_planned = run.batch.total_steps;
  job.stopped = steps.stopped;
  job.cuda_graph = steps.cuda_graph;
  job.short_steps = steps.short_steps;
  return job;
}

}  // namespace hpcbench::run
