#include "report/efficiency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process.h"
#include "core/text_wrap.h"
#include "report/table.h"
#include "results/steps.h"
#include "specs/registry.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

const char* part_name(Part p) {
  static constexpr const char* names[] = {"exposed communication", "compute inflation", "optimizer and other",
                                          "waiting for the slowest rank", "data and host", "recomputation",
                                          "unexplained"};
  return names[static_cast<size_t>(p)];
}

const char* part_key(Part p) {
  static constexpr const char* keys[] = {"exposed_comm", "compute_inflation", "optimizer_other",
                                         "waiting_slowest_rank", "data_host", "recompute", "unexplained"};
  return keys[static_cast<size_t>(p)];
}

namespace {

// One rank's figures in the decomposition's terms: each phase's own work
// (its time less its exposed part), the exposed parts summed (they add up
// with the phases' own work to the step exactly).
RankTime rank_time(const results::RankTiming& r) {
  using results::Phase;
  auto own = [&](Phase p) { return r.phase_ms[size_t(p)] - r.phase_exposed_ms[size_t(p)]; };
  RankTime t;
  t.step = r.step_ms;
  t.data = own(Phase::Data);
  t.forward = own(Phase::Forward);
  t.compute = own(Phase::Forward) + own(Phase::Backward);
  t.other = own(Phase::GradSync) + own(Phase::Optimizer);
  for (auto e : r.phase_exposed_ms) t.exposed += e;
  return t;
}

}  // namespace

RunTiming read_run_timing(const results::RunResult& r, const fs::path& origin) {
  RunTiming t;
  t.job_step_ms = r.step_ms_mean > 0 ? r.step_ms_mean : r.step_ms_median;
  t.recomputes = r.activation_checkpointing != 0;
  if (auto ranks = results::read_rank_timing(origin)) {
    for (auto& rank : *ranks) t.ranks.push_back(rank_time(rank));
    return t;
  }
  t.exact = false;
  RankTime one;
  one.step = t.job_step_ms;
  one.data = r.data_ms;
  one.forward = r.forward_ms;
  one.compute = r.forward_ms + r.backward_ms;
  one.other = r.optimizer_ms;
  one.exposed = r.comm_exposed_ms;
  t.ranks.push_back(one);
  return t;
}

Decomposition decompose(double measured_ms, double ideal_ms, const RunTiming& run, const RunTiming& base,
                        double scale) {
  Decomposition d;
  d.measured_ms = measured_ms;
  d.ideal_ms = ideal_ms;
  d.exact = run.exact && base.exact;
  if (run.ranks.empty() || base.ranks.empty() || scale <= 0) {
    d.ms[size_t(Part::Unexplained)] = measured_ms - ideal_ms;
    d.exact = false;
    return d;
  }
  // The least busy rank waited longest for the others: its communication
  // waits hold both the collectives' own cost and the time it stood waiting
  // for the slowest rank to arrive, which is at most how much longer that
  // rank was busy.
  size_t ref = 0, slow = 0;
  for (size_t i = 1; i < run.ranks.size(); ++i) {
    if (run.ranks[i].busy() < run.ranks[ref].busy()) ref = i;
    if (run.ranks[i].busy() > run.ranks[slow].busy()) slow = i;
  }
  d.reference_rank = ref;
  const RankTime& r = run.ranks[ref];
  const RankTime& b = base.ranks[0];
  const double waited = std::clamp(run.ranks[slow].busy() - r.busy(), 0.0, std::max(r.exposed, 0.0));
  auto& ms = d.ms;
  ms[size_t(Part::Data)] = r.data - b.data / scale;
  // The backward of a run that recomputes holds a second forward of the
  // encoder layers: the forward's own time (embedding and head are not run
  // again, so at most that), its own cause, not compute inflation.
  ms[size_t(Part::Recompute)] = run.recomputes && !base.recomputes ? std::max(r.forward, 0.0) : 0.0;
  ms[size_t(Part::Compute)] = r.compute - ms[size_t(Part::Recompute)] - b.compute / scale;
  ms[size_t(Part::Optimizer)] = r.other - b.other / scale;
  ms[size_t(Part::Exposed)] = r.exposed - waited;
  // The job's step is, step by step, its slowest rank's: beyond this rank's
  // own mean step it is the spread of the ranks' step ends.
  ms[size_t(Part::Waiting)] = waited + (run.job_step_ms - r.step);
  double named = 0;
  for (size_t p = 0; p + 1 < kParts; ++p) named += ms[p];
  ms[size_t(Part::Unexplained)] = (measured_ms - ideal_ms) - named;
  return d;
}

namespace {

// The strategy's own advice for the run's configuration (its spec's), where
// its record can be read.
strategies::Advice strategy_advice(const results::RunResult& r) {
  try {
    auto c = strategies::parse_record(r.strategy, r.strategy_options);
    return c.spec().advice(c.options());
  } catch (const UserError&) {
    return {};
  }
}

std::string advice(Part p, const results::RunResult& r) {
  switch (p) {
    case Part::Exposed:
      if (auto a = strategy_advice(r).exposed; !a.empty()) return a;
      return "overlap more of the communication with compute, or move fewer bytes (a smaller reduction dtype)";
    case Part::Compute:
      return "more samples per device (--batch-size): forward and backward cost more per sample than on the "
             "baseline (a smaller per-device batch, cores or memory bandwidth shared between ranks)";
    case Part::Optimizer:
      if (auto a = strategy_advice(r).optimizer; !a.empty()) return a;
      return "the optimizer and the strategy's per-step work (flattening, gathers after the update, the gradient "
             "norm) do not divide with the devices: more samples per device amortise them";
    case Part::Waiting:
      return "the ranks ran at different speeds: give each rank a device or core of its own (no busy neighbour), "
             "look for a slow device or node";
    case Part::Data:
      return "loading batches and host work per step do not divide with the devices: more samples per device, "
             "batches prefetched to the device";
    case Part::Recompute:
      return "activation checkpointing (--activation-checkpointing) runs every encoder layer's forward again in "
             "the backward, about a third more FLOPs, for the activation memory it saves: leave it off where the "
             "memory allows";
    default:
      return "the run files cannot attribute it (phase medians of an older file, or repeats whose median "
             "throughput is not one run's)";
  }
}

// The strategy with its record's options text: "zero (stage=3)".
std::string strategy_with_options(const results::RunResult& r) {
  return r.strategy_options.empty() ? r.strategy : fmt::format("{} ({})", r.strategy, r.strategy_options);
}

}  // namespace

std::vector<Part> parts_by_size(const Decomposition& d) {
  std::vector<Part> out;
  for (size_t p = 0; p < kParts; ++p) out.push_back(Part(p));
  std::stable_sort(out.begin(), out.end(), [&](Part a, Part b) { return d.ms[size_t(a)] > d.ms[size_t(b)]; });
  return out;
}

std::string causes_cell(const Decomposition& d) {
  std::string out;
  for (Part p : parts_by_size(d)) {
    double ms = d.ms[size_t(p)];
    // A part under a tenth of a point says nothing on noisy hardware.
    if (std::abs(d.points(p)) < 0.05) continue;
    out += fmt::format("{}{} {:.1f} pts ({:.2f} ms)", out.empty() ? "" : "; ", part_name(p), d.points(p), ms);
  }
  return out.empty() ? "nothing lost" : out;
}

Part largest_cause(const Decomposition& d) {
  for (Part p : parts_by_size(d))
    if (p != Part::Unexplained) return p;
  return Part::Unexplained;
}

std::string largest_cause_cell(const Decomposition& d) {
  static constexpr const char* short_names[] = {"exposed comm", "compute", "optimizer", "waiting", "data/host",
                                                "recompute", "unexplained"};
  if (d.lost_ms() <= 0) return "none";
  Part top = largest_cause(d);
  // No named part to speak of (a run without per-rank timing): what is lost is unexplained.
  if (std::abs(d.points(top)) < 0.05) top = Part::Unexplained;
  return fmt::format("{} {:.1f}", short_names[size_t(top)], d.points(top));
}

std::string dominant_sentence(const std::string& name, const std::string& strategy, const Decomposition& d) {
  (void)strategy;
  double lost_pts = 100 - 100 * d.efficiency();
  if (d.lost_ms() <= 0)
    return fmt::format("{}: {:.0f} % efficient, nothing lost against the ideal step.", name, 100 * d.efficiency());
  Part top = largest_cause(d);
  return fmt::format("{}: {:.0f} % efficient; of the {:.1f} points lost, the largest cause is {} ({:.1f} pts, "
                     "{:.2f} ms a step)",
                     name, 100 * d.efficiency(), lost_pts, part_name(top), d.points(top), d.ms[size_t(top)]);
}

std::vector<EfficiencyRow> efficiency_rows(const Comparison& c) {
  std::vector<EfficiencyRow> out;
  for (auto& row : c.rows) {
    const results::RunResult& r = row.run;
    if (row.is_baseline || !row.efficiency || !row.baseline || r.status != "ok" || r.samples_per_s <= 0 ||
        r.global_batch <= 0)
      continue;
    const results::RunResult& b = *row.baseline;
    fs::path base_origin;
    for (auto& other : c.rows)
      if (other.is_baseline && other.run.run_id == b.run_id && other.run.started_at == b.started_at)
        base_origin = other.origin;
    EfficiencyRow e;
    e.name = row_name(row);
    e.strategy = strategy_with_options(r);
    e.devices = results::devices(r);
    const double scale = static_cast<double>(results::devices(r)) / static_cast<double>(std::max<int64_t>(results::devices(b), 1));
    // The step the table's efficiency divides: the row's (median) throughput.
    const double measured = 1000.0 * static_cast<double>(r.global_batch) / r.samples_per_s;
    e.base_timing = read_run_timing(b, base_origin);
    e.scale = scale;
    e.d = decompose(measured, measured * *row.efficiency, read_run_timing(r, row.origin), e.base_timing, scale);
    std::string s = dominant_sentence(e.name, r.strategy, e.d);
    if (e.d.lost_ms() > 0) {
      Part top = Part::Unexplained;
      for (Part p : parts_by_size(e.d))
        if (p != Part::Unexplained) {
          top = p;
          break;
        }
      s += ": " + advice(top, r) + ".";
      if (std::abs(e.d.points(Part::Unexplained)) >= 10)
        s += fmt::format(" {:.1f} pts are unexplained: {}.", e.d.points(Part::Unexplained),
                         advice(Part::Unexplained, r));
    }
    e.sentence = s;
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

Table compact_table(const std::vector<EfficiencyRow>& rows) {
  Table t;
  t.columns = {{"row", "", false},       {"devices", "", true},   {"step", "ms", true},
               {"ideal", "ms", true},    {"efficiency", "%", true}, {"lost", "pts", true},
               {"causes, largest first (pts of efficiency, ms a step)", "", false}};
  for (auto& e : rows)
    t.rows.push_back({e.name, std::to_string(e.devices), fmt::format("{:.2f}", e.d.measured_ms),
                      fmt::format("{:.2f}", e.d.ideal_ms), fmt::format("{:.1f}", 100 * e.d.efficiency()),
                      fmt::format("{:.1f}", 100 - 100 * e.d.efficiency()), causes_cell(e.d)});
  return t;
}

const char* kIntro =
    "ideal = the baseline's step / devices; step = global batch / throughput; each cause in points of efficiency "
    "lost and ms per step (negative: a gain), adding up to step - ideal and to 100 - efficiency (results/README.md, "
    "\"Where the efficiency went\")";

}  // namespace

std::string efficiency_terminal(const std::vector<EfficiencyRow>& rows, bool wide) {
  if (rows.empty()) return "";
  std::string out;
  if (wide) {
    out = fmt::format("\nWhere the efficiency went\n{}\n", kIntro);
    out += render_terminal(compact_table(rows));
  } else {
    out = "\nWhere the efficiency went (every cause of every row: report.md, `hpcbench report --wide`)\n";
  }
  std::string lines;
  for (auto& e : rows) lines += "  " + e.sentence + "\n";
  for (auto& e : rows)
    if (!e.d.exact)
      lines += fmt::format("  {}: no per-rank timing in its run.json (or its baseline's): phase medians, the rest "
                           "unexplained\n",
                           e.name);
  return out + (wide ? lines : wrap_text(lines, output_columns()));
}

std::string efficiency_markdown(const std::vector<EfficiencyRow>& rows, const std::vector<std::string>& images) {
  if (rows.empty()) return "";
  std::string out = fmt::format("\n## Where the efficiency went\n\n{}.\n\n", kIntro);
  out += render_markdown(compact_table(rows));
  out += "\n";
  for (auto& e : rows) out += "- " + e.sentence + "\n";
  for (auto& img : images) out += fmt::format("\n![{}]({})\n", img, img);
  return out;
}

std::string efficiency_csv(const std::vector<EfficiencyRow>& rows) {
  Table t;
  t.columns = {{"row", "", false},         {"strategy", "", false}, {"devices", "", true},
               {"step_ms", "", true},      {"ideal_ms", "", true},  {"efficiency", "", true}};
  for (size_t p = 0; p < kParts; ++p) {
    t.columns.push_back({fmt::format("{}_ms", part_key(Part(p))), "", true});
    t.columns.push_back({fmt::format("{}_pts", part_key(Part(p))), "", true});
  }
  t.columns.push_back({"reference_rank", "", true});
  t.columns.push_back({"per_rank_timing", "", false});
  for (auto& e : rows) {
    std::vector<std::string> cells = {e.name, e.strategy, std::to_string(e.devices),
                                      fmt::format("{:.6g}", e.d.measured_ms), fmt::format("{:.6g}", e.d.ideal_ms),
                                      fmt::format("{:.6g}", e.d.efficiency())};
    for (size_t p = 0; p < kParts; ++p) {
      cells.push_back(fmt::format("{:.6g}", e.d.ms[p]));
      cells.push_back(fmt::format("{:.6g}", e.d.points(Part(p))));
    }
    cells.push_back(std::to_string(e.d.reference_rank));
    cells.push_back(e.d.exact ? "yes" : "no");
    t.rows.push_back(std::move(cells));
  }
  return render_csv(t);
}

namespace {

// Strategies in row order, each with its rows' indices.
std::vector<std::pair<std::string, std::vector<size_t>>> by_strategy(const std::vector<EfficiencyRow>& rows) {
  std::vector<std::pair<std::string, std::vector<size_t>>> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string s = rows[i].strategy.substr(0, rows[i].strategy.find(' '));
    auto it = std::find_if(out.begin(), out.end(), [&](auto& x) { return x.first == s; });
    if (it == out.end()) {
      out.emplace_back(s, std::vector<size_t>{});
      it = out.end() - 1;
    }
    it->second.push_back(i);
  }
  return out;
}

constexpr const char* kEffData = "efficiency.dat";
constexpr const char* kEffScript = "efficiency.gp";

}  // namespace

std::string efficiency_plot_data(const std::vector<EfficiencyRow>& rows) {
  std::string out;
  for (auto& [strategy, idx] : by_strategy(rows)) {
    out += fmt::format("# {}\n# label ideal", strategy);
    for (size_t p = 0; p < kParts; ++p) out += fmt::format(" {}", part_key(Part(p)));
    out += " measured\n";
    for (size_t k = 0; k < idx.size(); ++k) {
      auto& e = rows[idx[k]];
      // A stacked bar cannot show a part below zero (a gain) without hiding
      // another: gains are drawn as 0, and the measured step, marked, is then
      // below the stack's top.
      out += fmt::format("\"{} ({})\" {:.6g}", e.name, e.devices, e.d.ideal_ms);
      for (size_t p = 0; p < kParts; ++p) out += fmt::format(" {:.6g}", std::max(0.0, e.d.ms[p]));
      out += fmt::format(" {:.6g}\n", e.d.measured_ms);
    }
    out += "\n\n";
  }
  return out;
}

std::string efficiency_plot_script(const std::vector<EfficiencyRow>& rows, std::vector<std::string>& names) {
  names.clear();
  auto groups = by_strategy(rows);
  if (groups.empty()) return "";
  std::ostringstream s;
  s << "# Written by hpcbench report; run `gnuplot efficiency.gp` in this folder to redraw.\n"
    << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
    << "set boxwidth 0.6\nset grid ytics\nset key outside right top box\nset yrange [0:*]\n"
    << "set ylabel 'ms per optimizer step'\nset xtics rotate by -20\n"
    << "set linetype 1 lc rgb '#BBBBBB'\nset linetype 2 lc rgb '#0072B2'\nset linetype 3 lc rgb '#D55E00'\n"
    << "set linetype 4 lc rgb '#009E73'\nset linetype 5 lc rgb '#CC79A7'\nset linetype 6 lc rgb '#E69F00'\n"
    << "set linetype 7 lc rgb '#56B4E9'\nset linetype 8 lc rgb '#444444'\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    std::string name = "efficiency-" + groups[g].first;
    names.push_back(name);
    std::string plot = fmt::format("plot '{}' index {} using 2:xtic(1) title 'ideal (baseline / devices)'", kEffData, g);
    for (size_t p = 0; p < kParts; ++p)
      plot += fmt::format(", '' index {} using {} title '{}'", g, 3 + p, part_name(Part(p)));
    plot += fmt::format(", '' index {} using ($0):{} with points pt 7 ps 1.5 lc rgb 'black' title 'measured step'",
                        g, 3 + kParts);
    for (const char* term : {"png", "svg"}) {
      set_terminal(s, term, 960, 540);
      s << fmt::format("set output '{}'\nset title 'Where the efficiency went: {} (gains drawn as 0)'\n"
                       "{}\nunset output\n",
                       partial_name(name, term), groups[g].first, plot);
    }
  }
  return s.str();
}

PlotOutcome write_efficiency_plots(const std::vector<EfficiencyRow>& rows, const fs::path& dir,
                                   const std::string& gnuplot) {
  PlotOutcome out;
  std::vector<std::string> names;
  std::string script = efficiency_plot_script(rows, names);
  if (names.empty()) return out;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create the report folder {}: {}", dir.string(), ec.message());
  write_file_atomic(dir / kEffData, efficiency_plot_data(rows));
  write_file_atomic(dir / kEffScript, script);
  std::string program = find_program(gnuplot);
  if (program.empty()) {
    out.warnings.push_back(fmt::format("no efficiency plots: {} is not installed; data and script are in {}", gnuplot,
                                       dir.string()));
    return out;
  }
  run_gnuplot(program, dir, kEffScript, dir / ".efficiency-gnuplot.log", names, "no efficiency plots", out);
  return out;
}

}  // namespace hpcbench::report
