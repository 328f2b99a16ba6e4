#include "report/plot.h"

#include "results/utilisation_csv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "core/error.h"
#include "core/process.h"
#include "report/gnuplot.h"
#include "report/report_tables.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kData = "plot-data.dat";
constexpr const char* kScript = "plots.gp";
constexpr const char* kSteps = "plot-steps.dat";

// The rows that can be drawn, one series per strategy in table order; a
// strategy run at several global batches or precisions (a strong- and a
// weak-scaling sweep side by side) or on several devices gets one series for
// each, so that no line joins runs of different work or hardware. Each series
// starts at its baseline, the common origin of the scaling curves.
std::vector<std::pair<std::string, std::vector<const ComparisonRow*>>> series(const Comparison& c) {
  auto baseline_row = [&](const ComparisonRow& of) -> const ComparisonRow* {
    for (auto& row : c.rows)
      if (row.is_baseline && of.baseline && row.run.run_id == of.baseline->run_id &&
          row.run.started_at == of.baseline->started_at)
        return &row;
    return nullptr;
  };
  auto device = [](const results::RunResult& r) { return r.device_name.empty() ? r.device : r.device_name; };
  std::map<std::string, std::set<std::string>> batches, precisions, device_names;
  for (auto& row : c.rows) {
    batches[row.run.strategy].insert(std::to_string(row.run.global_batch));
    precisions[row.run.strategy].insert(row.run.precision);
    device_names[row.run.strategy].insert(device(row.run));
  }
  std::vector<std::pair<std::string, std::vector<const ComparisonRow*>>> out;
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    if (r.status != "ok" || r.samples_per_s <= 0) continue;
    std::string label = r.strategy;
    if (batches[r.strategy].size() > 1) label += fmt::format(" gb {}", r.global_batch);
    if (precisions[r.strategy].size() > 1) label += " " + r.precision;
    if (device_names[r.strategy].size() > 1) label += fmt::format(" {}", device(r));
    auto it = std::find_if(out.begin(), out.end(), [&](auto& s) { return s.first == label; });
    if (it == out.end()) {
      out.push_back({label, {}});
      it = out.end() - 1;
      const ComparisonRow* base = baseline_row(row);
      if (base && &row != base && results::devices(base->run) < results::devices(r) && !row.strong_mismatch.size())
        it->second.push_back(base);
    }
    it->second.push_back(&row);
  }
  return out;
}

std::string value(const std::optional<double>& v, double scale = 1) {
  return v ? fmt::format("{:.6g}", *v * scale) : "NaN";
}

struct PlotSpec {
  const char* name;
  const char* title;
  const char* ylabel;
  int column;
  const char* ideal;  // gnuplot expression of the ideal line, or nullptr
  const char* using_;  // gnuplot columns: x, y and, for error bars, low and high
  const char* style;
};

// Throughput, speedup and efficiency carry their bootstrap intervals as
// error bars (zero-length where a configuration ran once).
const std::vector<PlotSpec>& specs() {
  static const std::vector<PlotSpec> s = {
      {"throughput", "Training throughput (median, 95 % interval)", "sequences / s", 2, nullptr, "1:2:10:11",
       "yerrorlines"},
      {"speedup", "Speedup over the baseline (same samples; median, 95 % interval)", "speedup (x)", 3,
       "x / base_gpus", "1:3:6:7", "yerrorlines"},
      {"efficiency", "Strong-scaling efficiency (median, 95 % interval)", "efficiency (%)", 4, "100", "1:4:8:9",
       "yerrorlines"},
      {"memory", "Peak memory per device", "MiB", 5, nullptr, "1:5", "linespoints"},
  };
  return s;
}

std::string bounds(const std::optional<double>& point, const std::optional<stats::Interval>& iv, double scale) {
  if (!point) return "NaN NaN";
  if (!iv || !iv->has_interval()) return fmt::format("{:.6g} {:.6g}", *point * scale, *point * scale);
  return fmt::format("{:.6g} {:.6g}", iv->lo * scale, iv->hi * scale);
}

}  // namespace

std::string plot_data(const Comparison& c) {
  std::string out;
  for (auto& [strategy, rows] : series(c)) {
    // One gnuplot data block per strategy, selected with `index`.
    out += fmt::format("# {}\n# devices samples_per_s speedup efficiency_pct memory_mib speedup_lo speedup_hi "
                       "efficiency_lo efficiency_hi samples_per_s_lo samples_per_s_hi\n",
                       strategy);
    for (auto* row : rows) {
      const results::RunResult& r = row->run;
      std::optional<double> mem;
      if (r.peak_memory_bytes > 0) mem = static_cast<double>(r.peak_memory_bytes) / (1024.0 * 1024.0);
      out += fmt::format("{} {:.6g} {} {} {} {} {} {}\n", results::devices(r), r.samples_per_s, value(row->speedup),
                         value(row->efficiency, 100), value(mem), bounds(row->speedup, row->speedup_ci, 1),
                         bounds(row->efficiency, row->efficiency_ci, 100),
                         bounds(r.samples_per_s, row->throughput_ci, 1));
    }
    out += "\n\n";
  }
  return out;
}

std::string step_plot_data(const Comparison& c, const std::map<std::string, results::StepSeries>& steps) {
  std::string out;
  for (auto& row : c.rows) {
    auto it = steps.find(row.run.run_id);
    if (row.run.status != "ok" || it == steps.end() || it->second.step.empty()) continue;
    out += fmt::format("# {}\n# step loss ms\n", row_name(row));
    const auto& st = it->second;
    for (size_t i = 0; i < st.step.size(); ++i)
      out += fmt::format("{} {:.6g} {:.6g}\n", st.step[i], st.loss.at(i), st.ms.at(i));
    out += "\n\n";
  }
  return out;
}

namespace {

// Loss and step time against the step, one curve per row: the same model
// trained the same way lies on one loss curve; warm-up and stragglers show in
// the step times.
std::string step_plot_script(const Comparison& c, const std::map<std::string, results::StepSeries>& steps,
                             std::vector<std::string>& names) {
  std::vector<std::string> labels;
  for (auto& row : c.rows) {
    auto it = steps.find(row.run.run_id);
    if (row.run.status == "ok" && it != steps.end() && !it->second.step.empty()) labels.push_back(row_name(row));
  }
  if (labels.empty()) return "";
  std::ostringstream s;
  s << "unset logscale x\nunset logscale y\nset xtics autofreq\nset xrange [*:*]\nset yrange [*:*]\n"
       "set xlabel 'optimizer step'\n";
  struct Spec {
    const char *name, *title, *ylabel;
    int column;
  };
  for (auto spec : {Spec{"loss", "Training loss (median repeat of each row)", "loss", 2},
                    Spec{"step_time", "Step time (median repeat of each row, warm-up steps included)", "ms", 3}}) {
    names.push_back(spec.name);
    std::string plot = "plot ";
    for (size_t i = 0; i < labels.size(); ++i)
      plot += fmt::format("'{}' index {} using 1:{} with lines lw 2 title '{}', ", kSteps, i, spec.column, labels[i]);
    plot.resize(plot.size() - 2);
    for (const char* term : {"png", "svg"}) {
      set_terminal(s, term, 960, 540);
      s << fmt::format("set output '{}'\nset title '{}'\nset ylabel '{}'\n{}\nunset output\n",
                       partial_name(spec.name, term), spec.title, spec.ylabel, plot);
    }
  }
  return s.str();
}

}  // namespace

std::string plot_script(const Comparison& c, std::vector<std::string>& names) {
  auto ser = series(c);
  names.clear();
  if (ser.empty()) return "";
  std::set<int64_t> gpus;
  for (auto& [s, rows] : ser)
    for (auto* row : rows) gpus.insert(results::devices(row->run));
  std::string xtics;
  for (auto g : gpus) xtics += fmt::format("{}{}", xtics.empty() ? "" : ", ", g);
  int64_t base_gpus = c.baseline ? results::devices(*c.baseline) : 1;
  double efficiency_top = 110;
  for (auto& [st, rows] : ser)
    for (auto* row : rows)
      if (row->efficiency)
        efficiency_top = std::max(efficiency_top, (row->efficiency_ci ? row->efficiency_ci->hi : *row->efficiency) * 110);

  std::ostringstream s;
  s << "# Written by hpcbench report; run `gnuplot plots.gp` in this folder to redraw.\n"
    << "# The outputs go to hidden names first: hpcbench renames them once all are drawn.\n"
    << fmt::format("base_gpus = {}\n", base_gpus)
    << fmt::format("set datafile missing 'NaN'\nset grid\nset key outside right top box\nset xlabel '{}'\n",
                   device_word(c))
    // Colours that stay apart for colour-blind readers and on paper.
    << "set linetype 1 lc rgb '#0072B2' pt 7\nset linetype 2 lc rgb '#D55E00' pt 5\n"
    << "set linetype 3 lc rgb '#009E73' pt 9\nset linetype 4 lc rgb '#CC79A7' pt 11\n"
    << "set linetype 5 lc rgb '#E69F00' pt 13\nset linetype 6 lc rgb '#56B4E9' pt 4\n"
    << "set linetype 7 lc rgb '#882255' pt 6\nset linetype 8 lc rgb '#444444' pt 8\nset linetype cycle 8\n"
    << "set logscale x 2\n"
    << fmt::format("set xtics ({})\n", xtics)
    << fmt::format("set xrange [{}:{}]\n", static_cast<double>(*gpus.begin()) / 1.3,
                   static_cast<double>(*gpus.rbegin()) * 1.3)
    << "set yrange [0:*]\nset pointsize 1.3\n";
  for (auto& spec : specs()) {
    bool any = false;
    for (auto& [st, rows] : ser)
      for (auto* row : rows) {
        const results::RunResult& r = row->run;
        if (spec.column == 3 && row->speedup) any = true;
        if (spec.column == 4 && row->efficiency) any = true;
        if (spec.column == 5 && r.peak_memory_bytes > 0) any = true;
        if (spec.column == 2) any = true;
      }
    // gnuplot stops the whole script on a plot with no defined point.
    if (!any) continue;
    names.push_back(spec.name);
    std::string plot = "plot ";
    for (size_t i = 0; i < ser.size(); ++i)
      plot += fmt::format("'{}' index {} using {} with {} lw 2 title '{}', ", kData, i, spec.using_, spec.style,
                          ser[i].first);
    if (spec.ideal) plot += fmt::format("{} with lines dt 2 lw 1.5 lc rgb 'black' title 'ideal', ", spec.ideal);
    plot.resize(plot.size() - 2);
    // Log-log for the speedup, where the ideal is then a straight line.
    bool loglog = std::string(spec.name) == "speedup";
    for (const char* term : {"png", "svg"}) {
      if (loglog) s << "set logscale y 2\nset yrange [*:*]\n";
      // Room above the ideal 100 % line.
      else if (spec.column == 4) s << fmt::format("unset logscale y\nset yrange [0:{:.6g}]\n", efficiency_top);
      else s << "unset logscale y\nset yrange [0:*]\n";
      set_terminal(s, term, 960, 540);
      std::string title = spec.title;
      if (spec.column == 5) title = device_word(c) == "GPUs" ? "Peak memory per GPU" : "Peak memory per device";
      s << fmt::format("set output '{}'\nset title '{}'\nset ylabel '{}'\n{}\nunset output\n",
                       partial_name(spec.name, term), title, spec.ylabel, plot);
    }
  }
  return s.str();
}

PlotOutcome write_plots(const Comparison& c, const fs::path& dir, const std::string& gnuplot,
                        const std::map<std::string, results::StepSeries>& steps) {
  PlotOutcome out;
  std::vector<std::string> names;
  std::string script = plot_script(c, names);
  if (names.empty()) {
    out.warnings.push_back("no plots: no run with status ok and a throughput");
    return out;
  }
  script += step_plot_script(c, steps, names);
  write_file_atomic(dir / kData, plot_data(c));
  if (auto data = step_plot_data(c, steps); !data.empty()) write_file_atomic(dir / kSteps, data);
  write_file_atomic(dir / kScript, script);
  std::string program = find_program(gnuplot);
  if (program.empty()) {
    out.warnings.push_back(fmt::format(
        "no plots: {} is not installed (Debian/Ubuntu: apt-get install gnuplot-nox; Fedora: dnf install "
        "gnuplot; macOS: brew install gnuplot); its data and script are in {}",
        gnuplot, dir.string()));
    return out;
  }
  run_gnuplot(program, dir, kScript, dir / ".gnuplot.log", names, "no plots", out);
  return out;
}

// --- A run's utilisation.csv over time --------------------------------------

UtilisationPlotData utilisation_plot_data(const std::string& csv_text) {
  UtilisationPlotData out;
  std::map<std::string, size_t> series_of;
  std::vector<std::string> blocks;
  std::map<int64_t, double> step_start;
  double timed = -1, eval = -1;
  for (auto& r : results::parse_utilisation(csv_text)) {
    if (r.step > 0 && !step_start.count(r.step)) step_start[r.step] = r.time_s;
    if (r.phase == "timed" && timed < 0) timed = r.time_s;
    if (r.phase == "evaluation" && eval < 0) eval = r.time_s;
    std::string name = fmt::format("{} {} ({})", r.gpu ? "GPU" : "rank", r.index, r.host);
    auto [it, added] = series_of.emplace(name, out.series.size());
    if (added) {
      out.series.push_back(name);
      blocks.emplace_back();
    }
    if (r.power_w) out.has_power = true;
    if (!r.gpu) out.cpu = true;
    // The file's own precision (results/utilisation_csv.cpp), NaN for a value not sampled.
    blocks[it->second] += fmt::format("{:.3f} {} {}\n", r.time_s,
                                      r.util_percent ? fmt::format("{:.6g}", *r.util_percent) : "NaN",
                                      r.power_w ? fmt::format("{:.6g}", *r.power_w) : "NaN");
  }
  for (auto& b : blocks) out.data += b + "\n\n";  // one gnuplot index per series
  for (auto& [step, t] : step_start) out.step_starts.push_back(t);
  out.timed_start = timed;
  out.eval_start = eval;
  return out;
}

std::string utilisation_plot_script(const UtilisationPlotData& d, const std::string& stem, const std::string& title) {
  std::ostringstream s;
  // At most ~100 step lines: a long run's would fill the plot.
  size_t every = std::max<size_t>(1, (d.step_starts.size() + 99) / 100);
  std::string arrows;
  for (size_t i = 0; i < d.step_starts.size(); i += every)
    arrows += fmt::format("set arrow from {0},graph 0 to {0},graph 1 nohead lc rgb '#666666' dt 2 front\n",
                          d.step_starts[i]);
  if (d.timed_start >= 0)
    arrows += fmt::format("set arrow from {0},graph 0 to {0},graph 1 nohead lc rgb '#2ca02c' lw 2 back\n"
                          "set label 'timed steps' at {0},graph 0.95 offset 0.5,0 tc rgb '#2ca02c'\n",
                          d.timed_start);
  if (d.eval_start >= 0)
    arrows += fmt::format("set arrow from {0},graph 0 to {0},graph 1 nohead lc rgb '#d62728' lw 2 back\n"
                          "set label 'evaluation' at {0},graph 0.95 offset 0.5,0 tc rgb '#d62728'\n",
                          d.eval_start);
  auto plot = [&](int column) {
    std::string p = "plot ";
    for (size_t i = 0; i < d.series.size(); ++i)
      p += fmt::format("{}'{}.dat' index {} using 1:{} with lines lw 1.5 title '{}'", i ? ", " : "", stem, i, column,
                       d.series[i]);
    return p + "\n";
  };
  for (const char* term : {"png", "svg"}) {
    set_terminal(s, term, 1200, d.has_power ? 800 : 450);
    s << fmt::format("set output '{}'\n", partial_name(stem, term));
    s << "set datafile missing 'NaN'\nset key outside right\nset grid ytics\nunset arrow\nunset label\n" << arrows;
    s << "set xlabel 'time since sampling started (s); dotted: a training step begins'\n";
    if (d.has_power) s << fmt::format("set multiplot layout 2,1 title '{}'\n", title);
    else s << fmt::format("set title '{}'\n", title);
    s << (d.cpu ? "set ylabel 'CPU (% of one core)'\nset yrange [0:*]\n" : "set ylabel 'GPU utilisation (%)'\nset yrange [0:105]\n");
    s << plot(2);
    if (d.has_power) s << "set ylabel 'power (W)'\nset yrange [0:*]\n" << plot(3) << "unset multiplot\n";
    s << "unset output\n";
  }
  return s.str();
}

PlotOutcome write_utilisation_plot(const fs::path& csv, const fs::path& dir, const std::string& stem,
                                   const std::string& title, const std::string& gnuplot) {
  PlotOutcome out;
  std::string text;
  try {
    // A day of samples of eight GPUs at 100 ms is some 700 MB.
    text = read_file_bounded(csv, size_t{1} << 30);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    out.warnings.push_back(fmt::format("no utilisation plot for {}: {}", csv.string(), e.what()));
    return out;
  }
  auto d = utilisation_plot_data(text);
  if (d.series.empty()) {
    out.warnings.push_back(fmt::format("no utilisation plot for {}: no samples", csv.string()));
    return out;
  }
  std::string script_name = stem + ".gp";
  write_file_atomic(dir / (stem + ".dat"), d.data);
  write_file_atomic(dir / script_name, utilisation_plot_script(d, stem, title));
  std::string program = find_program(gnuplot);
  if (program.empty()) {
    out.warnings.push_back(fmt::format("no utilisation plot: {} is not installed; its data and script are in {}",
                                       gnuplot, dir.string()));
    return out;
  }
  run_gnuplot(program, dir, script_name, dir / ".gnuplot-utilisation.log", {stem}, "no utilisation plot", out);
  return out;
}

}  // namespace hpcbench::report
