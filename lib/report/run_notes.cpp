#include "report/run_notes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hpcbench::report {

std::string interrupted_runs(std::vector<results::LoadedRun>& runs, bool include) {
  std::vector<std::string> ids;
  for (auto& r : runs) {
    if (r.result.status != "interrupted") continue;
    ids.push_back(fmt::format("{} ({} steps)", r.result.run_id, r.result.steps));
    if (include) r.result.status = "ok";
  }
  if (ids.empty()) return "";
  if (include)
    return fmt::format("interrupted before their end and counted as finished runs (--include-interrupted), their "
                       "figures over the steps they did: {}", fmt::join(ids, ", "));
  return fmt::format("interrupted before their end (a time limit, scancel or Ctrl-C), shown without speedup or "
                     "efficiency: {}; --include-interrupted counts their figures over the steps they did",
                     fmt::join(ids, ", "));
}

std::vector<std::string> oversubscribed_runs(const std::vector<results::LoadedRun>& runs) {
  std::vector<std::string> out;
  for (auto& lr : runs) {
    const auto& r = lr.result;
    if (r.cpu_cores < 1 || r.threads_per_rank < 1) continue;
    const int64_t per_node = std::max<int64_t>(r.world_size / std::max<int64_t>(r.nodes, 1), 1);
    const int64_t threads = per_node * r.threads_per_rank;
    if (threads <= r.cpu_cores) continue;
    out.push_back(fmt::format("{}: {} rank(s) per node x {} thread(s) on {} core(s), oversubscribed {:.1f}x: its "
                              "{} device(s) shared the cores, so its figures measure that sharing more than {}",
                              r.run_id, per_node, r.threads_per_rank, r.cpu_cores,
                              static_cast<double>(threads) / static_cast<double>(r.cpu_cores), devices(r),
                              r.strategy));
  }
  return out;
}

}  // namespace hpcbench::report
