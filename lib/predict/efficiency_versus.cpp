#include "predict/efficiency_versus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/bert.h"
#include "predict/baseline.h"
#include "predict/layout.h"
#include "predict/step_model.h"
#include "predict/versus.h"
#include "specs/label.h"

namespace hpcbench::predict {

std::vector<PredictedParts> predicted_parts(const report::Comparison& c, const std::vector<report::EfficiencyRow>& rows,
                                            const CommModel& comm) {
  using report::Part;
  std::vector<PredictedParts> out;
  for (auto& e : rows) {
    PredictedParts pp;
    pp.row = e.name;
    pp.measured = e.d;
    const report::ComparisonRow* row = nullptr;
    for (auto& cr : c.rows)
      if (!cr.is_baseline && report::row_name(cr) == e.name) row = &cr;
    if (!row || !row->baseline) {
      pp.note = "no baseline";
      out.push_back(pp);
      continue;
    }
    const auto& r = row->run;
    try {
      auto base = baseline_from_result(*row->baseline, row->baseline->run_id);
      const double a = static_cast<double>(base.grad_accum);
      // The same baseline figures as the measured parts' ideal: means of its
      // own work per phase where run.json has them (medians otherwise).
      if (e.base_timing.exact && !e.base_timing.ranks.empty()) {
        const auto& b = e.base_timing.ranks[0];
        double fwd_share = base.forward_s + base.backward_s > 0 ? base.forward_s / (base.forward_s + base.backward_s)
                                                                 : 1.0 / 3;
        base.forward_s = b.compute * fwd_share / 1000 / a;
        base.backward_s = b.compute * (1 - fwd_share) / 1000 / a;
        base.other_s = b.data / 1000 / a;
        base.optimizer_s = b.other / 1000;
        base.step_s = e.base_timing.job_step_ms / 1000;
      }
      // Strong scaling: the row's micro-batch is a share of the baseline's;
      // the model takes compute as linear in the batch.
      if (r.batch_per_device <= 0) fail("{}: batch_per_device is missing", r.run_id);
      const double f = static_cast<double>(r.batch_per_device) / static_cast<double>(base.batch);
      base.forward_s *= f, base.backward_s *= f, base.other_s *= f;
      base.batch = r.batch_per_device;
      auto spec = strategies::parse_record(r.strategy, r.strategy_options);
      auto layout = model_layout(model::BertConfig::preset(base.model), base.seq);
      auto p = predict_step(base, layout, spec, shape_of(r), comm, step_options_of(r, base));
      // The ideal's shares of the baseline (ms per optimizer step).
      const double D = e.scale;
      const auto& bt = e.base_timing.ranks.empty() ? report::RankTime{} : e.base_timing.ranks[0];
      report::Decomposition d;
      d.ideal_ms = e.d.ideal_ms;
      d.measured_ms = p.step_s * 1000;
      d.ms[size_t(Part::Exposed)] = p.exposed_s * 1000;
      d.ms[size_t(Part::Compute)] = p.compute_s * 1000 - bt.compute / D;
      d.ms[size_t(Part::Optimizer)] = p.optimizer_s * 1000 - bt.other / D;
      d.ms[size_t(Part::Data)] = p.other_s * 1000 - bt.data / D;
      d.ms[size_t(Part::Waiting)] = 0;
      double named = 0;
      for (size_t k = 0; k + 1 < report::kParts; ++k) named += d.ms[k];
      d.ms[size_t(Part::Unexplained)] = d.measured_ms - d.ideal_ms - named;
      pp.predicted_parts = d;
      pp.predicted = true;
      if (!e.base_timing.exact) pp.note = "baseline phase medians";
    } catch (const UserError& err) {
      pp.note = err.what();
    }
    out.push_back(pp);
  }
  return out;
}

std::string predicted_parts_report(const std::vector<PredictedParts>& parts, const std::string& network) {
  using report::Part;
  if (parts.empty()) return "";
  std::string out = fmt::format(
      "\nwhere the efficiency went, predicted beside measured (network {}; ms per step; error = predicted - "
      "measured)\n",
      network);
  out += fmt::format("{:<28} {:<30} {:>9} {:>9} {:>9}\n", "row", "part", "measured", "predicted", "error");
  for (auto& pp : parts) {
    if (!pp.predicted) {
      out += fmt::format("{:<28} {}\n", pp.row, pp.note);
      continue;
    }
    auto line = [&](const std::string& what, double m, double p) {
      out += fmt::format("{:<28} {:<30} {:>9.2f} {:>9.2f} {:>+9.2f}\n", pp.row, what, m, p, p - m);
    };
    line("step", pp.measured.measured_ms, pp.predicted_parts.measured_ms);
    line("ideal (baseline / devices)", pp.measured.ideal_ms, pp.predicted_parts.ideal_ms);
    for (size_t k = 0; k < report::kParts; ++k)
      line(report::part_name(Part(k)), pp.measured.ms[k], pp.predicted_parts.ms[k]);
    // The part whose error is largest is where the model is wrong.
    size_t worst = 0;
    for (size_t k = 1; k < report::kParts; ++k)
      if (std::abs(pp.predicted_parts.ms[k] - pp.measured.ms[k]) >
          std::abs(pp.predicted_parts.ms[worst] - pp.measured.ms[worst]))
        worst = k;
    out += fmt::format("{:<28} largest error: {} ({:+.2f} ms){}\n", pp.row, report::part_name(Part(worst)),
                       pp.predicted_parts.ms[worst] - pp.measured.ms[worst], pp.note.empty() ? "" : "; " + pp.note);
  }
  return out;
}

}  // namespace hpcbench::predict
