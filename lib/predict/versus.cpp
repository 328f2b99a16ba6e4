#include "predict/versus.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>

#include "core/error.h"
#include "model/bert.h"
#include "predict/baseline.h"
#include "predict/layout.h"
#include "predict/step_model.h"
#include "specs/label.h"

namespace hpcbench::predict {

std::string versus_report(const report::Comparison& comparison, const CommModel& comm, const std::string& network) {
  std::string out = fmt::format("\npredicted beside measured (hpcbench predict; network {}; docs/scaling-model.md)\n",
                                network);
  out += fmt::format("{:<28} {:<28} {:>7} {:>10} {:>10} {:>8} {:>11} {:>11}  {}\n", "run", "strategy", "devices",
                     "step meas", "step pred", "error", "smp/s meas", "smp/s pred", "note");
  std::map<std::string, Layout> layouts;
  // The run's configuration in the one grammar its record was written in; a
  // record no strategy here reads is shown as it is and not predicted.
  auto label_of = [](const results::RunResult& r) {
    try {
      return strategies::parse_record(r.strategy, r.strategy_options).label();
    } catch (const UserError&) {
      return r.strategy;
    }
  };
  int shown = 0;
  for (auto& row : comparison.rows) {
    const auto& r = row.run;
    if (row.is_baseline || !row.baseline || results::devices(r) <= 1 || r.status != "ok") continue;
    auto line = [&](const std::string& pred, const std::string& err, const std::string& ps, const std::string& note) {
      out += fmt::format("{:<28} {:<28} {:>7} {:>10.2f} {:>10} {:>8} {:>11.2f} {:>11}  {}\n", r.run_id,
                         label_of(r), results::devices(r), r.step_ms_median, pred,
                         err, r.samples_per_s, ps, note);
      ++shown;
    };
    if (!row.weak_mismatch.empty()) {
      line("n/c", "", "", row.weak_mismatch);
      continue;
    }
    try {
      auto base = baseline_from_result(*row.baseline, row.baseline->run_id);
      auto spec = strategies::parse_record(r.strategy, r.strategy_options);
      auto key = fmt::format("{}/{}", base.model, base.seq);
      if (!layouts.count(key)) layouts[key] = model_layout(model::BertConfig::preset(base.model), base.seq);
      auto p = predict_step(base, layouts[key], spec, shape_of(r), comm, step_options_of(r, base));
      line(fmt::format("{:.2f}", p.step_s * 1000), fmt::format("{:+.1f}%", 100 * (p.step_s * 1000 / r.step_ms_median - 1)),
           fmt::format("{:.2f}", p.samples_per_s), base.phases_assumed ? "baseline phases assumed 1:2" : "");
    } catch (const UserError& e) {
      line("-", "", "", e.what());
    }
  }
  if (shown == 0) out += "(no run of more than one device to predict)\n";
  return out;
}

}  // namespace hpcbench::predict
