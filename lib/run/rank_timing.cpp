#include "run/rank_timing.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/injection.h"
#include "distributed/process_group.h"

namespace hpcbench::run {

std::vector<results::RankTiming> rank_timing(const std::vector<results::StepTimes>& timed, const RunContext& ctx) {
  // step, phases, phases' exposed parts, comm, exposed
  constexpr int64_t kFields = 1 + 2 * static_cast<int64_t>(results::kPhases) + 2;
  auto mine = at::zeros({kFields}, at::kDouble);
  auto m = mine.accessor<double, 1>();
  for (auto& t : timed) {
    for (size_t p = 0; p < results::kPhases; ++p) {
      m[0] += t.phase_ms[p];
      m[1 + static_cast<int64_t>(p)] += t.phase_ms[p];
      m[1 + static_cast<int64_t>(results::kPhases + p)] += t.phase_exposed_ms[p];
    }
    m[kFields - 2] += t.comm_ms;
    m[kFields - 1] += t.comm_exposed_ms;
  }
  if (!timed.empty()) mine /= static_cast<double>(timed.size());
  auto all = mine.view({1, kFields});
  if (ctx.comm && ctx.world_size > 1) {
    auto local = mine.to(ctx.comm->device());
    auto gathered = at::empty({ctx.world_size * kFields}, local.options());
    ctx.comm->allgather(gathered, local);
    all = gathered.cpu().view({ctx.world_size, kFields});
  }
  std::vector<results::RankTiming> out;
  auto a = all.accessor<double, 2>();
  for (int64_t r = 0; r < all.size(0); ++r) {
    results::RankTiming t;
    t.rank = static_cast<int>(r);
    t.step_ms = a[r][0];
    for (size_t p = 0; p < results::kPhases; ++p) {
      t.phase_ms[p] = a[r][1 + static_cast<int64_t>(p)];
      t.phase_exposed_ms[p] = a[r][1 + static_cast<int64_t>(results::kPhases + p)];
    }
    t.comm_ms = a[r][kFields - 2];
    t.comm_exposed_ms = a[r][kFields - 1];
    out.push_back(t);
  }
  return out;
}

double test_slow_rank_ms(int rank) {
  auto slow = injected_slow_rank();
  return slow && slow->rank == rank ? static_cast<double>(slow->ms) : 0;
}

}  // namespace hpcbench::run
