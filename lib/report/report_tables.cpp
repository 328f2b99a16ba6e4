#include "report/report_tables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/split.h"
#include "core/text_wrap.h"
#include "report/efficiency.h"
#include "report/noise.h"

namespace hpcbench::report {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool has_figures(const Comparison& c, const ComparisonRow& row) { return c.baseline && row.run.status == "ok"; }

// A scaling figure: "-" without figures, "n/c" where not comparable.
std::string figure(const Comparison& c, const ComparisonRow& row, const std::optional<double>& v,
                   double scale, const char* format) {
  if (!has_figures(c, row) && row.source.empty()) return "-";
  if (row.run.status != "ok") return "-";
  if (!v) return "n/c";
  return fmt::format(fmt::runtime(format), *v * scale);
}

std::string positive(double v, double scale, const char* format) {
  return v > 0 ? fmt::format(fmt::runtime(format), v / scale) : "-";
}

std::string figure_csv(const Comparison& c, const ComparisonRow& row, const std::optional<double>& v) {
  if (!has_figures(c, row)) return "";
  if (!v) return "n/c";
  return fmt::format("{:.6g}", *v);
}

std::string measured_csv(double v) { return v > 0 ? fmt::format("{:.6g}", v) : ""; }
std::string measured_csv(int64_t v) { return v > 0 ? std::to_string(v) : ""; }

// The device sampler's columns (lib/monitor) appear only when some run has
// them, so tables of runs without sampling keep their shape.
bool any_sampled(const Comparison& c) {
  for (auto& row : c.rows)
    if (row.run.utilisation_mean_percent >= 0 || row.run.samples_per_kj > 0) return true;
  return false;
}
bool any_bubble(const Comparison& c) {
  return std::any_of(c.rows.begin(), c.rows.end(), [](auto& r) { return r.run.bubble_fraction >= 0; });
}

// The fast engine's settings where any run used them (--cuda-graph,
// --fused): "graph", "graph (not captured: cpu)", "fused", "eager".
bool any_engine(const Comparison& c) {
  return std::any_of(c.rows.begin(), c.rows.end(), [](auto& r) {
    return r.run.fused > 0 || (!r.run.cuda_graph.empty() && r.run.cuda_graph != "off");
  });
}
std::string engine_text(const results::RunResult& r) {
  std::vector<std::string> parts;
  if (r.cuda_graph.starts_with("captured")) parts.push_back("graph");
  else if (!r.cuda_graph.empty() && r.cuda_graph != "off") parts.push_back("graph (" + r.cuda_graph + ")");
  if (r.fused > 0) parts.push_back("fused");
  return parts.empty() ? "eager" : fmt::format("{}", fmt::join(parts, "+"));
}

// A pipeline's measured bubble beside its theory, in percent of the step.
std::string bubble_text(const results::RunResult& r) {
  if (r.bubble_fraction < 0) return "-";
  return fmt::format("{:.1f} ({:.1f})", 100 * r.bubble_fraction, 100 * r.bubble_theory);
}

// The strategy and, where its record names one, its rank layout ("dp2-pp2").
std::string strategy_with_layout(const results::RunResult& r) {
  for (auto& item : split(r.strategy_options))
    if (item.starts_with("layout=")) return r.strategy + " " + item.substr(std::string_view("layout=").size());
  return r.strategy;
}

std::string sampled(double v, const char* format) { return v >= 0 ? fmt::format(fmt::runtime(format), v) : "-"; }
// An interval's bound; "" without an interval (one run, not computed).
std::string bound(const std::optional<stats::Interval>& iv, double stats::Interval::*which) {
  return iv && iv->has_interval() ? fmt::format("{:.6g}", (*iv).*which) : "";
}

std::string device_text(const results::RunResult& r) {
  std::string type = r.device.empty() ? "?" : r.device;
  return r.device_name.empty() ? type : type + " " + r.device_name;
}

// A figure with its interval where the report has repeats: "1.20 [1.10, 1.31]",
// "1.20 (1 run)" for a configuration run once.
std::string with_interval(const Comparison& c, std::string cell, const std::optional<stats::Interval>& iv, double scale,
                          const char* format) {
  if (!has_repeats(c) || !iv || cell == "-" || cell == "n/c") return cell;
  if (!iv->has_interval()) return cell + " (1 run)";
  return fmt::format("{} [{}, {}]", cell, fmt::format(fmt::runtime(format), iv->lo * scale),
                     fmt::format(fmt::runtime(format), iv->hi * scale));
}

// Evaluation's own clock, all of its parts; -1 where there was none.
double eval_seconds(const results::RunResult& r) {
  if (r.eval_forward_s < 0) return -1;
  return std::max(0.0, r.eval_load_s) + r.eval_forward_s + std::max(0.0, r.eval_postprocess_s) +
         std::max(0.0, r.eval_metric_s);
}

std::string score(double v) { return v >= 0 ? fmt::format("{:.2f}", v) : "-"; }

// Leaves out the numeric columns with no figure in any row.
void drop_empty_columns(Table& t, size_t from) {
  for (size_t col = t.columns.size(); col-- > from;) {
    if (!t.columns[col].numeric) continue;
    bool empty = std::all_of(t.rows.begin(), t.rows.end(), [&](auto& row) { return row[col] == "-"; });
    if (!empty) continue;
    t.columns.erase(t.columns.begin() + static_cast<std::ptrdiff_t>(col));
    for (auto& row : t.rows) row.erase(row.begin() + static_cast<std::ptrdiff_t>(col));
  }
}

}  // namespace

std::string device_word(const Comparison& c) {
  bool any = false;
  for (auto& row : c.rows) {
    if (row.run.device.empty()) continue;
    any = true;
    if (row.run.device != "cpu") return "GPUs";
  }
  return any ? "devices" : "GPUs";
}

Table comparison_table(const Comparison& c) {
  Table t;
  const std::string word = device_word(c);
  const std::string one = word == "GPUs" ? "GPU" : "device";
  const bool repeats = has_repeats(c);
  t.columns = {{"run", "", false},         {"strategy", "", false},       {word, "", true},
               {"global batch", "seq", true}, {"status", "", false}};
  if (repeats) t.columns.push_back({"runs", "", true});
  size_t figures_from = t.columns.size();
  for (TableColumn col : std::vector<TableColumn>{
           {"throughput", "seq/s", true}, {"per " + one, "seq/s", true}, {"speedup", "x", true},
           {"efficiency", "%", true}, {"weak scaling", "%", true}, {"memory/" + one, "MiB", true},
           {"NVML peak", "MiB", true}, {"allocated", "MiB", true}, {"vs baseline", "x", true}, {"model state", "MiB", true}, {"step p90", "ms", true},
           {"comm", "ms", true}, {"exposed comm", "ms", true}, {"MFU", "%", true}, {"eval", "s", true},
           {"EM", "%", true}, {"F1", "%", true}})
    t.columns.push_back(col);
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    bool ok = r.status == "ok";
    std::vector<std::string> cells = {row_name(row), strategy_with_layout(r), std::to_string(results::devices(r)),
                                      r.global_batch > 0 ? std::to_string(r.global_batch) : "-", r.status};
    if (repeats) cells.push_back(std::to_string(row.repeats.size()));
    for (auto& cell : std::vector<std::string>{
             with_interval(c, ok ? positive(r.samples_per_s, 1, "{:.2f}") : "-", row.throughput_ci, 1, "{:.2f}"),
             ok ? positive(r.samples_per_s_per_device, 1, "{:.2f}") : "-",
             with_interval(c, figure(c, row, row.speedup, 1, "{:.2f}"), row.speedup_ci, 1, "{:.2f}"),
             with_interval(c, figure(c, row, row.efficiency, 100, "{:.1f}"), row.efficiency_ci, 100, "{:.1f}"),
             figure(c, row, row.weak_efficiency, 100, "{:.1f}"),
             ok ? positive(static_cast<double>(r.peak_memory_bytes), kMiB, "{:.1f}") : "-",
             ok ? positive(static_cast<double>(r.nvml_peak_memory_bytes), kMiB, "{:.1f}") : "-",
             ok ? positive(static_cast<double>(r.peak_allocated_bytes), kMiB, "{:.1f}") : "-",
             figure(c, row, row.memory_ratio, 1, "{:.2f}"),
             ok ? positive(static_cast<double>(r.model_state_bytes), kMiB, "{:.1f}") : "-",
             ok ? positive(r.step_ms_p90, 1, "{:.2f}") : "-",
             ok ? positive(r.comm_ms, 1, "{:.2f}") : "-",
             ok && r.comm_ms > 0 ? fmt::format("{:.2f}", r.comm_exposed_ms) : "-",
             ok ? positive(r.mfu, 0.01, "{:.1f}") : "-",
             ok && eval_seconds(r) >= 0 ? fmt::format("{:.2f}", eval_seconds(r)) : "-",
             ok ? score(r.exact_match) : "-",
             ok ? score(r.f1) : "-",
         })
      cells.push_back(cell);
    t.rows.push_back(std::move(cells));
    if (!c.device_baselines.empty()) t.rows.back().push_back(row.baseline ? row.baseline->run_id : "-");
    if (any_sampled(c)) {
      t.rows.back().push_back(ok && r.utilisation_mean_percent >= 0
                                  ? fmt::format("{:.1f} {}", r.utilisation_mean_percent, r.utilisation_of)
                                  : "-");
      t.rows.back().push_back(ok ? sampled(r.samples_per_kj, "{:.1f}") : "-");
    }
    if (any_bubble(c)) t.rows.back().push_back(ok ? bubble_text(r) : "-");
    if (any_engine(c)) t.rows.back().push_back(engine_text(r));
  }
  if (!c.device_baselines.empty()) t.columns.push_back({"base run", "", false});
  if (any_sampled(c)) {
    t.columns.push_back({"utilisation", "%", true});
    t.columns.push_back({"samples/kJ", "seq/kJ", true});
  }
  if (any_bubble(c)) t.columns.push_back({"bubble (theory)", "%", true});
  if (any_engine(c)) t.columns.push_back({"engine", "", false});
  drop_empty_columns(t, figures_from);
  return t;
}

Table headline_table(const Comparison& c, const std::vector<EfficiencyRow>& efficiency) {
  Table t;
  const std::string word = device_word(c);
  const std::string one = word == "GPUs" ? "GPU" : "device";
  t.columns = {{"configuration", "", false}, {word, "", true},           {"throughput", "seq/s", true},
               {"speedup", "x", true},       {"efficiency", "%", true},  {"memory/" + one, "MiB", true},
               {"largest loss", "pts", false}};
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    const bool ok = r.status == "ok";
    const std::string name = row_name(row);
    std::string cause = "-";
    for (auto& e : efficiency)
      if (e.name == name) cause = largest_cause_cell(e.d);
    t.rows.push_back({
        ok ? name : name + " (" + r.status + ")",
        std::to_string(results::devices(r)),
        with_interval(c, ok ? positive(r.samples_per_s, 1, "{:.2f}") : "-", row.throughput_ci, 1, "{:.2f}"),
        with_interval(c, figure(c, row, row.speedup, 1, "{:.2f}"), row.speedup_ci, 1, "{:.2f}"),
        figure(c, row, row.efficiency, 100, "{:.1f}"),
        ok ? positive(static_cast<double>(r.peak_memory_bytes), kMiB, "{:.1f}") : "-",
        cause,
    });
  }
  drop_empty_columns(t, 2);
  if (std::all_of(t.rows.begin(), t.rows.end(), [](auto& row) { return row.back() == "-"; })) {
    t.columns.pop_back();
    for (auto& row : t.rows) row.pop_back();
  }
  return t;
}

namespace {

// The row against its baseline by the verdict test: its p-value and
// "faster", "slower", "not significant" or why there is no test; empty
// for the baseline itself and rows without one.
std::pair<std::string, std::string> baseline_verdict_cells(const Comparison& c, const ComparisonRow& row) {
  if (!row.baseline || row.is_baseline) return {};
  const ComparisonRow* base = nullptr;
  for (auto& b : c.rows)
    if (b.is_baseline && b.run.run_id == row.baseline->run_id) base = &b;
  if (!base) return {};
  const auto name = row_name(row), base_name = row_name(*base);
  for (auto& v : c.verdicts) {
    if (!(v.faster == name && v.slower == base_name) && !(v.faster == base_name && v.slower == name)) continue;
    if (!v.test.defined)
      return {"", std::min(v.faster_runs, v.slower_runs) < kMinRunsForVerdict ? "too few runs" : "no spread"};
    return {fmt::format("{:.6g}", v.test.p),
            !v.significant ? "not significant" : v.faster == name ? "faster" : "slower"};
  }
  return {};
}

}  // namespace

Table comparison_csv_table(const Comparison& c) {
  Table t;
  for (const char* name : {"run_id", "strategy", "devices", "global_batch", "status", "samples_per_s",
                           "samples_per_s_per_device", "speedup", "efficiency", "weak_scaling_efficiency",
                           "peak_memory_bytes", "memory_ratio", "model_state_bytes", "baseline_run_id",
                           "not_comparable", "runs", "samples_per_s_lo", "samples_per_s_hi", "speedup_lo",
                           "speedup_hi", "efficiency_lo", "efficiency_hi", "step_ms_p90", "comm_ms",
                           "comm_exposed_ms", "mfu", "exact_match", "f1", "speedup_p", "speedup_verdict"})
    t.columns.push_back({name, "", false});
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    bool ok = r.status == "ok";
    t.rows.push_back({
        r.run_id,
        r.strategy,
        std::to_string(results::devices(r)),
        measured_csv(r.global_batch),
        r.status,
        ok ? measured_csv(r.samples_per_s) : "",
        ok ? measured_csv(r.samples_per_s_per_device) : "",
        figure_csv(c, row, row.speedup),
        figure_csv(c, row, row.efficiency),
        figure_csv(c, row, row.weak_efficiency),
        ok ? measured_csv(r.peak_memory_bytes) : "",
        figure_csv(c, row, row.memory_ratio),
        ok ? measured_csv(r.model_state_bytes) : "",
        row.baseline ? row.baseline->run_id : "",
        has_figures(c, row) ? row.strong_mismatch : "",
        std::to_string(row.repeats.size()),
        bound(row.throughput_ci, &stats::Interval::lo),
        bound(row.throughput_ci, &stats::Interval::hi),
        bound(row.speedup_ci, &stats::Interval::lo),
        bound(row.speedup_ci, &stats::Interval::hi),
        bound(row.efficiency_ci, &stats::Interval::lo),
        bound(row.efficiency_ci, &stats::Interval::hi),
        ok ? measured_csv(r.step_ms_p90) : "",
        ok ? measured_csv(r.comm_ms) : "",
        ok && r.comm_ms > 0 ? fmt::format("{:.6g}", r.comm_exposed_ms) : "",
        ok ? measured_csv(r.mfu) : "",
        ok && r.exact_match >= 0 ? fmt::format("{:.6g}", r.exact_match) : "",
        ok && r.f1 >= 0 ? fmt::format("{:.6g}", r.f1) : "",
    });
    auto [p, verdict] = baseline_verdict_cells(c, row);
    t.rows.back().push_back(p);
    t.rows.back().push_back(verdict);
    if (any_sampled(c)) {
      t.rows.back().push_back(ok && r.utilisation_mean_percent >= 0 ? fmt::format("{:.6g}", r.utilisation_mean_percent) : "");
      t.rows.back().push_back(ok ? r.utilisation_of : "");
      t.rows.back().push_back(ok && r.samples_per_kj >= 0 ? fmt::format("{:.6g}", r.samples_per_kj) : "");
    }
  }
  if (any_sampled(c))
    for (const char* name : {"utilisation_mean_percent", "utilisation_of", "samples_per_kj"})
      t.columns.push_back({name, "", false});
  // Beside peak_memory_bytes (what the device held): the driver's figure for
  // the process and the peak of live tensors, where measured.
  t.columns.push_back({"nvml_peak_memory_bytes", "", false});
  t.columns.push_back({"peak_allocated_bytes", "", false});
  for (size_t k = 0; k < c.rows.size(); ++k) {
    const auto& r = c.rows[k].run;
    const bool ok = r.status == "ok";
    t.rows[k].push_back(ok && r.nvml_peak_memory_bytes >= 0 ? measured_csv(r.nvml_peak_memory_bytes) : "");
    t.rows[k].push_back(ok && r.peak_allocated_bytes >= 0 ? measured_csv(r.peak_allocated_bytes) : "");
  }
  return t;
}

Table reference_table(const Comparison& c) {
  Table t;
  t.columns = {{"strategy", "", false},      {"GPUs", "", true},          {"device", "", false},
               {"model", "", false},         {"precision", "", false},    {"global batch", "seq", true},
               {"time", "s", true},          {"throughput", "seq/s", true}, {"speedup", "x", true},
               {"efficiency", "%", true},    {"weak scaling", "%", true}, {"source", "", false}};
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    t.rows.push_back({
        r.strategy,
        std::to_string(results::devices(r)),
        r.device_name.empty() ? "-" : r.device_name,
        r.model.empty() ? "-" : r.model,
        r.precision.empty() ? "-" : r.precision,
        r.global_batch > 0 ? std::to_string(r.global_batch) : "-",
        positive(r.train_time_s, 1, "{:.2f}"),
        positive(r.samples_per_s, 1, "{:.1f}"),
        figure(c, row, row.speedup, 1, "{:.2f}"),
        figure(c, row, row.efficiency, 100, "{:.1f}"),
        figure(c, row, row.weak_efficiency, 100, "{:.1f}"),
        row.source,
    });
  }
  return t;
}

std::vector<std::string> baseline_lines(const Comparison& c) {
  if (!c.baseline) return {"baseline: none"};
  auto line = [](const results::RunResult& b) {
    return fmt::format("baseline: {} ({}, {} {}, {}, model {}, {}, seq {}, global batch {}, data {})", b.run_id,
                       b.strategy, results::devices(b), b.device == "cpu" ? "device" : "GPU", device_text(b), b.model, b.precision, b.seq_length,
                       b.global_batch, b.data);
  };
  std::vector<std::string> out = {line(*c.baseline)};
  for (auto& b : c.device_baselines) out.push_back(line(b) + ", for the runs on its device");
  return out;
}

namespace {

// Two significant digits, more where rounding would put a p-value on the
// other side of 5 % than the verdict ("0.05" for 0.0504 beside "not
// significant" reads like a contradiction); below 0.001 a bound. The
// relation comes with it, so that a line reads "p < 0.001", not "p = < 0.001".
std::string p_text(double p) {
  if (p < 0.001) return "p < 0.001";
  for (int digits = 2; digits < 8; ++digits) {
    auto text = fmt::format("{:.{}g}", p, digits);
    if ((std::stod(text) < kVerdictAlpha) == (p < kVerdictAlpha) && std::stod(text) != kVerdictAlpha)
      return "p = " + text;
  }
  return fmt::format("p = {:.8g}", p);
}

std::string runs_word(size_t n) { return fmt::format("{} run{}", n, n == 1 ? "" : "s"); }

// What the test said, or why it could not say anything and what would let
// it: the line never shows a p-value the verdict did not come from.
std::string test_text(const Verdict& v) {
  const auto& t = v.test;
  size_t fewest = std::min(v.faster_runs, v.slower_runs);
  if (fewest < kMinRunsForVerdict)
    return fmt::format("{} on a side cannot show 5 % with Welch's t-test (no spread to test against): --repeats {}",
                       runs_word(fewest), kRecommendedRepeats);
  if (!t.defined) return fmt::format("Welch's t-test undefined ({}): not ranked", t.why);
  return fmt::format("[{:.3f}, {:.3f}], Welch's t-test {}", t.ratio.lo, t.ratio.hi, p_text(t.p));
}

std::string verdict_line(const Verdict& v) {
  auto count = [&](int64_t n) { return fmt::format("{} {}", n, n == 1 ? "device" : "devices"); };
  const auto& r = v.test.ratio;
  std::string head = v.devices == v.slower_devices
                         ? fmt::format("{}: {} / {} = {:.3f}x", count(v.devices), v.faster, v.slower, r.point)
                         : fmt::format("{} ({}) / {} ({}) = {:.3f}x", v.faster, count(v.devices), v.slower,
                                       count(v.slower_devices), r.point);
  if (!v.test.defined) return head + ": " + test_text(v);
  return fmt::format("{} {}: {}", head, test_text(v),
                     v.significant ? fmt::format("significant at 5 %, {} is faster", v.faster)
                                   : "not significant at 5 %, not ranked");
}

// A significant verdict in one terminal line: "2 devices: ddp > dp (Welch's t-test p = 0.004), 1.800x [...]".
std::string significant_line(const Verdict& v) {
  auto count = [&](int64_t n) { return fmt::format("{} {}", n, n == 1 ? "device" : "devices"); };
  std::string head = v.devices == v.slower_devices
                         ? fmt::format("{}: {} > {}", count(v.devices), v.faster, v.slower)
                         : fmt::format("{} ({}) > {} ({})", v.faster, count(v.devices), v.slower,
                                       count(v.slower_devices));
  // The p-value right after the verdict, so that a wrapped line keeps them together.
  return fmt::format("{} (Welch's t-test {}), {:.3f}x [{:.3f}, {:.3f}]", head, p_text(v.test.p),
                     v.test.ratio.point, v.test.ratio.lo, v.test.ratio.hi);
}

const char* kOneRun =
    "one run per configuration: no intervals and no significance test; repeat the runs "
    "(`hpcbench run --repeats 5`, `hpcbench sweep --repeats 5`) to tell differences from noise";

}  // namespace

std::vector<std::string> significance_lines(const Comparison& c) {
  if (!has_repeats(c)) {
    if (c.rows.size() < 2) return {};
    return {kOneRun};
  }
  std::vector<std::string> out;
  for (auto& v : c.verdicts) out.push_back(verdict_line(v));
  for (auto& line : ranking_lines(c)) out.push_back("ranking, " + line);
  return out;
}

// The ranking, then only the pairs that differ significantly, and how many
// do not (report.md and --wide list every pair).
static std::vector<std::string> significance_summary(const Comparison& c) {
  if (!has_repeats(c)) return significance_lines(c);
  std::vector<std::string> out;
  for (auto& line : ranking_lines(c)) out.push_back("ranking, " + line);
  size_t others = 0;
  for (auto& v : c.verdicts) {
    if (v.significant) out.push_back(significant_line(v));
    else ++others;
  }
  if (others > 0)
    out.push_back(fmt::format("{} of {} pairs do not differ significantly at 5 % by Welch's t-test (or ran too few "
                              "times); report.md "
                              "and `hpcbench report --wide` list every pair",
                              others, c.verdicts.size()));
  return out;
}

std::string terminal_report(const Comparison& c, const std::vector<ReferenceSet>& references, bool wide) {
  std::string out;
  // Lines that are not tables are wrapped to the terminal's 120 columns
  // (wide: left as they are, for a wide terminal or a file).
  auto lines = [&](const std::string& text) { return wide ? text : wrap_text(text, output_columns()); };
  if (!c.rows.empty()) {
    out += lines(fmt::format("{}\n\n", fmt::join(baseline_lines(c), "\n")));
    out += wide ? render_terminal(comparison_table(c))
                : render_terminal(headline_table(c, efficiency_rows(c)), output_columns());
    if (!wide) out += "(every column: report.md, report.csv, `hpcbench report --wide`)\n";
    if (!c.warnings.empty() || !c.notes.empty() || !c.noise.empty()) out += "\n";
    std::string text;
    for (auto& w : c.warnings) text += "warning: " + w + "\n";
    // Disturbed runs: one line per row by default, every one with --wide.
    if (wide)
      for (auto& w : c.noise) text += "warning: " + w.text + "\n";
    else
      for (auto& line : noise_summary_lines(c.noise)) text += "warning: " + line + "\n";
    for (auto& n : c.notes) text += "note: " + n + "\n";
    auto sig = wide ? significance_lines(c) : significance_summary(c);
    if (!sig.empty()) text += "\n";
    for (auto& line : sig) text += "significance: " + line + "\n";
    out += lines(text);
  }
  for (auto& ref : references) {
    if (!out.empty()) out += "\n";
    out += fmt::format("published figures: {} ({})\n\n", ref.name, ref.file.filename().string());
    out += render_terminal(reference_table(ref.comparison));
    if (!ref.comparison.warnings.empty()) out += "\n";
    std::string text;
    for (auto& w : ref.comparison.warnings) text += "note: " + w + "\n";
    out += lines(text);
  }
  return out;
}

std::string markdown_report(const Comparison& c, const std::vector<ReferenceSet>& references,
                            const std::vector<std::string>& plots) {
  std::string out = "# hpcbench report\n\n";
  if (c.rows.empty()) out += "No measured runs.\n";
  else out += fmt::format("{}\n\n", fmt::join(baseline_lines(c), "\n\n"));
  if (!c.rows.empty())
    out += fmt::format("Speedup: baseline time / time for the same samples; efficiency: speedup / {0} relative to the "
                       "baseline (strong scaling); weak scaling: throughput per {1} / the baseline's. n/c: not "
                       "comparable with the baseline (see the warnings).\n\n",
                       device_word(c), device_word(c) == "GPUs" ? "GPU" : "device");
  if (has_repeats(c))
    out += "Runs of the same configuration form one row: throughput is their median, speedup and efficiency "
           "the ratio of medians; brackets hold the 95 % bootstrap interval (10000 resamples, fixed seed), "
           "\"1 run\" where a configuration ran once. They describe the spread; the verdicts below come from "
           "one test, whose interval is wider at few repeats.\n\n";
  if (!c.device_baselines.empty())
    out += "Runs on another device than the first baseline are divided by the baseline of their own device "
           "(column baseline).\n\n";
  if (!c.rows.empty()) out += render_markdown(comparison_table(c));
  if (!c.warnings.empty() || !c.noise.empty()) {
    out += "\nWarnings:\n\n";
    for (auto& w : c.warnings) out += "- " + w + "\n";
    for (auto& w : c.noise) out += "- " + w.text + "\n";
    if (!c.noise.empty()) out += fmt::format("- noise, what to do: {}\n", kNoiseRemedy);
  }
  if (!c.notes.empty()) {
    out += "\nNotes:\n\n";
    for (auto& n : c.notes) out += "- " + n + "\n";
  }
  if (auto sig = significance_lines(c); !sig.empty()) {
    out += "\nSignificance: Welch's t-test on log throughput, two-sided, decides at 5 %; the ratio is that of "
           "the rows' geometric means with the same test's 95 % interval, which excludes 1 exactly when p < 0.05 "
           "(docs/statistics.md says why this test, and how often it sees a real difference at a given number "
           "of repeats). `>` ranks, `~` does not:\n\n";
    for (auto& line : sig) out += "- " + line + "\n";
  }
  if (!plots.empty()) {
    out += "\n## Plots\n\n";
    for (auto& p : plots) out += fmt::format("![{}]({})\n", p.substr(0, p.rfind('.')), p);
  }
  if (!references.empty()) out += "\n## Published figures\n";
  for (auto& ref : references) {
    out += fmt::format("\n### {}\n\n", ref.name);
    out += render_markdown(reference_table(ref.comparison));
    if (!ref.comparison.warnings.empty()) {
      out += "\n";
      for (auto& w : ref.comparison.warnings) out += "- " + w + "\n";
    }
  }
  return out;
}

std::string csv_report(const Comparison& c) { return render_csv(comparison_csv_table(c)); }

}  // namespace hpcbench::report
