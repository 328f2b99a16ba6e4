#include "report/noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/atomic_file.h"
#include "stats/stats.h"
#include "stats/steps.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

std::vector<double> timed(const std::vector<double>& all, int64_t timed_steps) {
  if (timed_steps <= 0 || static_cast<size_t>(timed_steps) > all.size()) return all;
  return {all.end() - timed_steps, all.end()};
}

namespace {

// One run's own series: CV, a slow first step, drift, outlier steps.
void run_warnings(const std::string& row, const results::RunResult& r, const std::vector<double>& ms,
                  std::vector<NoiseWarning>& out) {
  auto add = [&](double severity, std::string what, const std::string& remedy) {
    out.push_back({row, r.run_id, what, fmt::format("{}: {}: {}", r.run_id, what, remedy), severity});
  };
  double cv = ms.size() > 1 ? stats::coefficient_of_variation(ms)
                            : (r.step_ms_mean > 0 ? r.step_ms_stddev / r.step_ms_mean : 0);
  if (cv > kMaxStepCv)
    add(cv / kMaxStepCv,
        fmt::format("step times vary by {:.0f} % (coefficient of variation over {:.0f} %)", 100 * cv, 100 * kMaxStepCv),
        "the machine was shared or the run too short; run more steps (--max-steps) on an exclusive node "
        "(sbatch --exclusive)");
  if (ms.size() >= 5) {
    double med = stats::median(ms);
    if (ms.front() > kSlowFirstStep * med)
      add(ms.front() / med / kSlowFirstStep,
          fmt::format("the first timed step took {:.1f} ms, {:.1f}x the median {:.1f} ms", ms.front(), ms.front() / med,
                      med),
          "the warm-up is too short; raise --timing-warmup-steps");
  }
  if (ms.size() >= 9) {
    double d = stats::drift(ms);
    if (std::fabs(d) > kMaxDrift)
      add(std::fabs(d) / kMaxDrift,
          fmt::format("step times drift by {:+.0f} % from the first third of the timed steps to the last", 100 * d),
          "thermal throttling, or neighbours coming or going: use an exclusive node and more repeats (--repeats)");
  }
  // Outlier steps: from the series where there is one (numbered from the
  // first timed step), else as run.json counted them.
  int64_t count = r.step_outliers;
  std::string named = r.step_outlier_steps;
  double worst = 1 + stats::kStepOutlierShare;
  if (ms.size() > 2) {
    auto f = stats::step_figures(ms);
    count = static_cast<int64_t>(f.outliers.size());
    named = stats::outlier_text(ms, f, r.steps - static_cast<int64_t>(ms.size()) + 1);
    for (size_t i : f.outliers) worst = std::max(worst, std::max(ms[i] / f.median, f.median / ms[i]));
  }
  if (count > 0)
    add(worst / (1 + stats::kStepOutlierShare),
        fmt::format("{} outlier step{}: {}", count, count == 1 ? "" : "s", named),
        "the run's figure is its median step, which leaves them out; the throughput counts them");
}

}  // namespace

std::vector<NoiseWarning> noise_warnings(const Comparison& c, const std::map<std::string, results::StepSeries>& steps) {
  std::vector<NoiseWarning> out;
  for (auto& row : c.rows) {
    const auto name = row_name(row);
    for (auto& r : row.repeats) {
      if (r.status != "ok") continue;
      auto it = steps.find(r.run_id);
      run_warnings(name, r, it == steps.end() ? std::vector<double>{} : timed(it->second.ms, r.timed_steps), out);
    }
    std::vector<double> tp;
    for (auto& r : row.repeats) tp.push_back(r.samples_per_s);
    if (tp.size() < 3) continue;
    const double med = stats::median(tp), scale = stats::mad(tp) * stats::kMadNormalScale;
    for (size_t i : stats::mad_outliers(tp, kOutlierMads)) {
      auto what = fmt::format("throughput {:.2f} seq/s is more than {:.0f} MADs from the median {:.2f} of its {} repeats",
                              tp[i], kOutlierMads, med, tp.size());
      out.push_back({name, row.repeats[i].run_id, what,
                     fmt::format("{}: {}: it was disturbed; rerun it on an exclusive node or add repeats (--repeats) "
                                 "so that one disturbed run weighs less",
                                 row.repeats[i].run_id, what),
                     std::fabs(tp[i] - med) / scale / kOutlierMads});
    }
  }
  return out;
}

std::vector<std::string> noise_summary_lines(const std::vector<NoiseWarning>& noise) {
  std::vector<std::string> rows, out;
  for (auto& w : noise)
    if (std::find(rows.begin(), rows.end(), w.row) == rows.end()) rows.push_back(w.row);
  for (auto& row : rows) {
    const NoiseWarning* worst = nullptr;
    std::vector<std::string> runs;
    size_t n = 0;
    for (auto& w : noise) {
      if (w.row != row) continue;
      ++n;
      if (std::find(runs.begin(), runs.end(), w.run) == runs.end()) runs.push_back(w.run);
      if (!worst || w.severity > worst->severity) worst = &w;
    }
    out.push_back(fmt::format("noise in {}: {} warning{} over {} run{}; the worst: {}: {}", row, n, n == 1 ? "" : "s",
                              runs.size(), runs.size() == 1 ? "" : "s", worst->run, worst->what));
  }
  if (!out.empty())
    out.push_back(fmt::format("noise: report.md lists every warning with its remedy; {}", kNoiseRemedy));
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
