#include "report/noise.h"

#include <fmt/format.h>

#include <cmath>

#include "core/atomic_file.h"
#include "stats/stats.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

std::vector<double> timed(const std::vector<double>& all, int64_t timed_steps) {
  if (timed_steps <= 0 || static_cast<size_t>(timed_steps) > all.size()) return all;
  return {all.end() - timed_steps, all.end()};
}

std::vector<std::string> noise_warnings(const Comparison& c, const std::map<std::string, results::StepSeries>& steps) {
  std::vector<std::string> out;
  for (auto& row : c.rows) {
    for (auto& r : row.repeats) {
      if (r.status != "ok") continue;
      auto it = steps.find(r.run_id);
      std::vector<double> ms = it == steps.end() ? std::vector<double>{} : timed(it->second.ms, r.timed_steps);
      double cv = ms.size() > 1 ? stats::coefficient_of_variation(ms)
                                : (r.step_ms_mean > 0 ? r.step_ms_stddev / r.step_ms_mean : 0);
      if (cv > kMaxStepCv)
        out.push_back(fmt::format(
            "{}: step times vary by {:.0f} % (coefficient of variation over {:.0f} %): the machine was shared or "
            "the run too short; run more steps (--max-steps) on an exclusive node (sbatch --exclusive)",
            r.run_id, 100 * cv, 100 * kMaxStepCv));
      if (ms.size() >= 5) {
        double med = stats::median(ms);
        if (ms.front() > kSlowFirstStep * med)
          out.push_back(fmt::format("{}: the first timed step took {:.1f} ms, {:.1f}x the median {:.1f} ms: the "
                                    "warm-up is too short; raise --timing-warmup-steps",
                                    r.run_id, ms.front(), ms.front() / med, med));
      }
      if (ms.size() >= 9) {
        double d = stats::drift(ms);
        if (std::fabs(d) > kMaxDrift)
          out.push_back(fmt::format("{}: step times drift by {:+.0f} % from the first third of the timed steps to "
                                    "the last (thermal throttling, or neighbours coming or going): use an "
                                    "exclusive node and more repeats (--repeats)",
                                    r.run_id, 100 * d));
      }
    }
    std::vector<double> tp;
    for (auto& r : row.repeats) tp.push_back(r.samples_per_s);
    if (tp.size() < 3) continue;
    for (size_t i : stats::mad_outliers(tp, kOutlierMads))
      out.push_back(fmt::format("{}: throughput {:.2f} seq/s is more than {:.0f} MADs from the median {:.2f} of its "
                                "{} repeats: it was disturbed; rerun it on an exclusive node or add repeats "
                                "(--repeats) so that one disturbed run weighs less",
                                row.repeats[i].run_id, tp[i], kOutlierMads, stats::median(tp), tp.size()));
  }
  return out;
}

std::vector<std::string> loss_deviation_lines(const Comparison& c, const std::map<std::string, results::StepSeries>& steps) {
  struct Worst {
    double dev = -1, base_loss = 0;
    std::string run;
    int64_t step = 0;
  } worst;
  size_t compared = 0;
  for (auto& row : c.rows) {
    if (!row.baseline || row.is_baseline || row.run.status != "ok" || !row.strong_mismatch.empty()) continue;
    auto a = steps.find(row.run.run_id), b = steps.find(row.baseline->run_id);
    if (a == steps.end() || b == steps.end()) continue;
    std::map<int64_t, double> base;
    for (size_t i = 0; i < b->second.step.size(); ++i) base[b->second.step[i]] = b->second.loss[i];
    bool any = false;
    for (size_t i = 0; i < a->second.step.size(); ++i) {
      auto it = base.find(a->second.step[i]);
      if (it == base.end()) continue;
      any = true;
      double dev = std::fabs(a->second.loss[i] - it->second);
      if (dev > worst.dev) worst = {dev, it->second, row.run.run_id, a->second.step[i]};
    }
    compared += any;
  }
  if (compared == 0) return {};
  // No verdict on the size: dropout masks are drawn per rank, so curves of
  // different strategies agree to the noise of those, not bit for bit.
  return {fmt::format("training loss of {} run(s) against the baseline's curve, step by step: the largest deviation "
                      "is {:.3g} ({}, step {}, where the baseline's loss is {:.4f}: {:.2g} % of it)",
                      compared, worst.dev, worst.run, worst.step, worst.base_loss,
                      worst.base_loss != 0 ? 100 * worst.dev / std::fabs(worst.base_loss) : 0.0)};
}

}  // namespace hpcbench::report
