#include "report/plan_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hpcbench::report {

namespace {

std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return r;
}

std::string verdict(const PlanCheck& c) {
  if (c.measured < 2) return fmt::format("{} verified layout(s) finished: too few to check the ranking", c.measured);
  const PlanCheckRow* best = nullptr;      // predicted best among the measured
  const PlanCheckRow* measured = nullptr;  // measured best
  for (auto& r : c.rows) {
    if (!r.measured || r.planned.rank == 0) continue;
    if (!best || r.planned.rank < best->planned.rank) best = &r;
    if (r.measured_rank == 1) measured = &r;
  }
  if (c.best_in_top2)
    return fmt::format("held: the predicted best, {}, measured #{} of {}", best->planned.job, best->measured_rank,
                       c.measured);
  const double gap = measured->samples_per_s / best->samples_per_s - 1;
  const double noise = 2 * std::max(best->noise, measured->noise);
  return fmt::format("{}: the predicted best, {}, measured #{} of {}, {:.1f} % behind the measured best {}; the runs' "
                     "noise (twice the larger steps' stddev / mean) is {:.1f} %",
                     gap > noise ? "NOT held beyond the runs' noise" : "not held, but within the runs' noise",
                     best->planned.job, best->measured_rank, c.measured, 100 * gap, measured->planned.job,
                     100 * noise);
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

PlanCheck check_plan(const results::PlanFile& plan, const std::vector<results::RunResult>& runs) {
  PlanCheck c;
  for (auto& l : plan.layouts) {
    PlanCheckRow row{l};
    for (auto& r : runs)
      if (r.run_id == l.job && r.status == "ok" && r.samples_per_s > 0) {
        row.measured = true;
        row.samples_per_s = r.samples_per_s;
        row.step_ms = r.step_ms_median;
        row.noise = r.step_ms_mean > 0 ? r.step_ms_stddev / r.step_ms_mean : 0;
      }
    c.rows.push_back(row);
  }
  std::vector<PlanCheckRow*> done;
  for (auto& r : c.rows)
    if (r.measured && r.planned.rank > 0) done.push_back(&r);
  c.measured = static_cast<int>(done.size());
  std::sort(done.begin(), done.end(), [](auto* a, auto* b) { return a->samples_per_s > b->samples_per_s; });
  for (size_t k = 0; k < done.size(); ++k) done[k]->measured_rank = static_cast<int>(k) + 1;
  std::vector<double> predicted, measured;
  for (auto* r : done) predicted.push_back(r->planned.samples_per_s), measured.push_back(r->samples_per_s);
  if (done.size() >= 2) c.spearman = spearman(predicted, measured);
  const PlanCheckRow* best = nullptr;
  for (auto* r : done)
    if (!best || r->planned.rank < best->planned.rank) best = r;
  c.best_in_top2 = best && best->measured_rank <= 2;
  c.verdict = verdict(c);
  return c;
}

std::string plan_check_text(const results::PlanFile& plan, const PlanCheck& c) {
  std::string s = fmt::format(
      "\nplan beside measured ({} node(s) x {}, global batch {}; calibration {:+.1f} % to {:+.1f} %, ties within "
      "{:.1f} %)\n",
      plan.nodes, plan.gpus_per_node, plan.global_batch, 100 * plan.calibration_low, 100 * plan.calibration_high,
      100 * plan.tie_threshold);
  s += fmt::format("{:<40} {:>5} {:>4} {:>12} {:>12} {:>8} {:>9} {:>22} {:>7}\n", "job", "rank", "tie", "predicted/s",
                   "measured/s", "error", "measured#", "measured step in", "noise");
  for (auto& r : c.rows) {
    const auto& p = r.planned;
    const std::string rank = p.rank == 0 ? "ref" : std::to_string(p.rank);
    if (!r.measured) {
      s += fmt::format("{:<40} {:>5} {:>4} {:>12.1f} {:>12}\n", p.job, rank, p.rank ? std::to_string(p.tie_group) : "",
                       p.samples_per_s, "not finished");
      continue;
    }
    const bool inside = r.step_ms >= p.step_ms_low && r.step_ms <= p.step_ms_high;
    s += fmt::format("{:<40} {:>5} {:>4} {:>12.1f} {:>12.1f} {:>+7.1f}% {:>9} {:>22} {:>6.1f}%\n", p.job, rank,
                     p.rank ? std::to_string(p.tie_group) : "", p.samples_per_s, r.samples_per_s,
                     100 * (p.samples_per_s / r.samples_per_s - 1), p.rank ? std::to_string(r.measured_rank) : "",
                     fmt::format("{} [{:.1f}, {:.1f}]", inside ? "yes" : "NO", p.step_ms_low, p.step_ms_high),
                     100 * r.noise);
  }
  if (c.measured >= 2) s += fmt::format("rank correlation (Spearman) of predicted and measured: {:.2f}\n", c.spearman);
  s += "ranking: " + c.verdict + "\n";
  return s;
}

}  // namespace hpcbench::report
