#include "report/report_tables.h"

#include <fmt/format.h>

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
std::string sampled(double v, const char* format) { return v >= 0 ? fmt::format(fmt::runtime(format), v) : "-"; }

std::string device_text(const RunResult& r) {
  std::string type = r.device.empty() ? "?" : r.device;
  return r.device_name.empty() ? type : type + " " + r.device_name;
}

}  // namespace

Table comparison_table(const Comparison& c) {
  Table t;
  t.columns = {{"run", "", false},         {"strategy", "", false},       {"GPUs", "", true},
               {"global batch", "seq", true}, {"status", "", false},      {"throughput", "seq/s", true},
               {"per GPU", "seq/s", true},  {"speedup", "x", true},         {"efficiency", "%", true},
               {"weak scaling", "%", true}, {"memory/GPU", "MiB", true},    {"vs baseline", "x", true},
               {"model state", "MiB", true}};
  for (auto& row : c.rows) {
    const RunResult& r = row.run;
    bool ok = r.status == "ok";
    t.rows.push_back({
        r.run_id,
        r.strategy,
        std::to_string(devices(r)),
        r.global_batch > 0 ? std::to_string(r.global_batch) : "-",
        r.status,
        ok ? positive(r.samples_per_s, 1, "{:.2f}") : "-",
        ok ? positive(r.samples_per_s_per_device, 1, "{:.2f}") : "-",
        figure(c, row, row.speedup, 1, "{:.2f}"),
        figure(c, row, row.efficiency, 100, "{:.1f}"),
        figure(c, row, row.weak_efficiency, 100, "{:.1f}"),
        ok ? positive(static_cast<double>(r.peak_memory_bytes), kMiB, "{:.1f}") : "-",
        figure(c, row, row.memory_ratio, 1, "{:.2f}"),
        ok ? positive(static_cast<double>(r.model_state_bytes), kMiB, "{:.1f}") : "-",
    });
    if (!c.device_baselines.empty()) t.rows.back().push_back(row.baseline ? row.baseline->run_id : "-");
    if (any_sampled(c)) {
      t.rows.back().push_back(ok && r.utilisation_mean_percent >= 0
                                  ? fmt::format("{:.1f} {}", r.utilisation_mean_percent, r.utilisation_of)
                                  : "-");
      t.rows.back().push_back(ok ? sampled(r.samples_per_kj, "{:.1f}") : "-");
    }
  }
  if (!c.device_baselines.empty()) t.columns.push_back({"baseline", "", false});
  if (any_sampled(c)) {
    t.columns.push_back({"utilisation", "%", true});
    t.columns.push_back({"samples/kJ", "seq/kJ", true});
  }
  return t;
}

Table comparison_csv_table(const Comparison& c) {
  Table t;
  for (const char* name : {"run_id", "strategy", "devices", "global_batch", "status", "samples_per_s",
                           "samples_per_s_per_device", "speedup", "efficiency", "weak_scaling_efficiency",
                           "peak_memory_bytes", "memory_ratio", "model_state_bytes", "baseline_run_id",
                           "not_comparable"})
    t.columns.push_back({name, "", false});
  for (auto& row : c.rows) {
    const RunResult& r = row.run;
    bool ok = r.status == "ok";
    t.rows.push_back({
        r.run_id,
        r.strategy,
        std::to_string(devices(r)),
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
    });
    if (any_sampled(c)) {
      t.rows.back().push_back(ok && r.utilisation_mean_percent >= 0 ? fmt::format("{:.6g}", r.utilisation_mean_percent) : "");
      t.rows.back().push_back(ok ? r.utilisation_of : "");
      t.rows.back().push_back(ok && r.samples_per_kj >= 0 ? fmt::format("{:.6g}", r.samples_per_kj) : "");
    }
  }
  if (any_sampled(c))
    for (const char* name : {"utilisation_mean_percent", "utilisation_of", "samples_per_kj"})
      t.columns.push_back({name, "", false});
  return t;
}

Table reference_table(const Comparison& c) {
  Table t;
  t.columns = {{"strategy", "", false},      {"GPUs", "", true},          {"device", "", false},
               {"model", "", false},         {"precision", "", false},    {"global batch", "seq", true},
               {"time", "s", true},          {"throughput", "seq/s", true}, {"speedup", "x", true},
               {"efficiency", "%", true},    {"weak scaling", "%", true}, {"source", "", false}};
  for (auto& row : c.rows) {
    const RunResult& r = row.run;
    t.rows.push_back({
        r.strategy,
        std::to_string(devices(r)),
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
  auto line = [](const RunResult& b) {
    return fmt::format("baseline: {} ({}, {} GPU, {}, model {}, {}, seq {}, global batch {}, data {})", b.run_id,
                       b.strategy, devices(b), device_text(b), b.model, b.precision, b.seq_length,
                       b.global_batch, b.data);
  };
  std::vector<std::string> out = {line(*c.baseline)};
  for (auto& b : c.device_baselines) out.push_back(line(b) + ", for the runs on its device");
  return out;
}

std::string terminal_report(const Comparison& c, const std::vector<ReferenceSet>& references) {
  std::string out;
  if (!c.rows.empty()) {
    out += fmt::format("{}\n\n", fmt::join(baseline_lines(c), "\n")) + render_terminal(comparison_table(c));
    if (!c.warnings.empty() || !c.notes.empty()) out += "\n";
    for (auto& w : c.warnings) out += "warning: " + w + "\n";
    for (auto& n : c.notes) out += "note: " + n + "\n";
  }
  for (auto& ref : references) {
    if (!out.empty()) out += "\n";
    out += fmt::format("published figures: {} ({})\n\n", ref.name, ref.file.filename().string());
    out += render_terminal(reference_table(ref.comparison));
    if (!ref.comparison.warnings.empty()) out += "\n";
    for (auto& w : ref.comparison.warnings) out += "note: " + w + "\n";
  }
  return out;
}

std::string markdown_report(const Comparison& c, const std::vector<ReferenceSet>& references,
                            const std::vector<std::string>& plots) {
  std::string out = "# hpcbench report\n\n";
  if (c.rows.empty()) out += "No measured runs.\n";
  else out += fmt::format("{}\n\n", fmt::join(baseline_lines(c), "\n\n"));
  if (!c.rows.empty()) out += "Speedup: baseline time / time for the same samples; efficiency: speedup / GPUs relative to the "
         "baseline (strong scaling); weak scaling: throughput per GPU / the baseline's. n/c: not comparable "
         "with the baseline (see the warnings).\n\n";
  if (!c.device_baselines.empty())
    out += "Runs on another device than the first baseline are divided by the baseline of their own device "
           "(column baseline).\n\n";
  if (!c.rows.empty()) out += render_markdown(comparison_table(c));
  if (!c.warnings.empty()) {
    out += "\nWarnings:\n\n";
    for (auto& w : c.warnings) out += "- " + w + "\n";
  }
  if (!c.notes.empty()) {
    out += "\nNotes:\n\n";
    for (auto& n : c.notes) out += "- " + n + "\n";
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
