// `hpcbench report`: reads run results, compares them with a baseline run
// and prints/writes the scaling tables and plots (lib/report).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "predict/collective.h"
#include "predict/baseline.h"
#include "predict/efficiency_versus.h"
#include "predict/system_toml.h"
#include "predict/versus.h"
#include "report/compare.h"
#include "report/efficiency.h"
#include "report/noise.h"
#include "report/out_folder.h"
#include "report/plan_check.h"
#include "report/plot.h"
#include "report/reference.h"
#include "report/report_tables.h"
#include "report/run_notes.h"
#include "report/tensorboard_report.h"
#include "results/plan_file.h"
#include "results/run_reader.h"
#include "sweep/manifest.h"
#include "sweep/status.h"

namespace hpcbench::cli {

namespace fs = std::filesystem;

namespace {

struct ReportOptions {
  std::vector<std::string> paths;
  std::string baseline = "auto";
  std::string out;
  std::string format = "text";
  bool no_plots = false;
  bool reference = false;
  std::string reference_dir = "results/reference";
  std::string gnuplot = "gnuplot";
  std::string system, comm;  // the scaling model's network: predicted beside measured
  std::string tensorboard;
  bool include_interrupted = false;
  bool wide = false;
};

// The runs the paths hold; a sweep folder also lists the jobs that left no
// results yet: they are shown as pending, running or failed instead of
// silently missing.
results::LoadedRuns load_runs(const std::vector<fs::path>& paths) {
  auto loaded = results::read_results(paths);
  for (auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec) || !fs::exists(p / "sweep.json", ec)) continue;
    try {
      for (auto& r : sweep::unfinished_jobs(sweep::read_manifest(p)))
        loaded.runs.push_back(results::LoadedRun{r, p / "sweep.json"});
    } catch (const Interrupted&) {
      throw;  // a stop signal ends the report, not just this sweep's rows
    } catch (const UserError& e) {
      loaded.warnings.push_back(fmt::format("skipping {}: {}", (p / "sweep.json").string(), e.what()));
    }
  }
  for (auto& w : loaded.warnings) spdlog::warn("{}", w);
  return loaded;
}

// The comparison against the baseline, with its noise, loss and run notes.
// `results` receives the runs' records once interrupted runs are marked.
report::Comparison compare_runs(const ReportOptions& o, results::LoadedRuns& loaded,
                                std::vector<results::RunResult>& results,
                                std::map<std::string, results::StepSeries>& steps) {
  const std::string interrupted = report::interrupted_runs(loaded.runs, o.include_interrupted);
  for (auto& r : loaded.runs) results.push_back(r.result);
  std::optional<results::RunResult> baseline;
  if (!results.empty())
    if (auto i = report::choose_baseline(results, o.baseline)) baseline = results[*i];
  auto comparison = report::compare(loaded.runs, baseline);
  for (auto& r : loaded.runs)
    if (auto s = results::read_step_series(r.origin); !s.ms.empty()) steps[r.result.run_id] = std::move(s);
  comparison.noise = report::noise_warnings(comparison, steps);
  for (auto& n : report::loss_deviation_lines(comparison, steps)) comparison.notes.push_back(n);
  if (!interrupted.empty()) comparison.notes.push_back(interrupted);
  for (auto& n : report::oversubscribed_runs(loaded.runs)) comparison.notes.push_back(n);
  return comparison;
}

// --system / --comm: each run beside the scaling model's prediction.
void print_predicted(const ReportOptions& o, const report::Comparison& comparison,
                     const std::vector<report::EfficiencyRow>& efficiency) {
  if (o.system.empty() && o.comm.empty()) return;
  if (!o.system.empty() && !o.comm.empty()) fail("report: give one of --system and --comm");
  std::unique_ptr<predict::CommModel> net;
  if (!o.system.empty()) {
    auto sys = predict::read_system(o.system);
    // Beside measured runs a mismatch shows in the error column, so it is
    // said rather than refused: the runs' device against the file's.
    if (comparison.baseline) {
      try {
        auto base = predict::baseline_from_result(*comparison.baseline, comparison.baseline->run_id);
        if (auto w = predict::check_device(base, sys, true); !w.empty()) {
          spdlog::warn("{}", w);
          fmt::print("\nWARNING: {}\n", w);
        }
      } catch (const UserError&) {
        // versus_report says per row why the baseline cannot be used.
      }
    }
    net = std::make_unique<predict::AlphaBeta>(sys);
  } else {
    net = predict::read_bench_comm(o.comm);
  }
  const std::string network = o.system.empty() ? o.comm : o.system;
  fmt::print("{}", predict::versus_report(comparison, *net, network));
  fmt::print("{}", predict::predicted_parts_report(predict::predicted_parts(comparison, efficiency, *net), network));
}

// A sweep `plan` wrote has plan.json beside sweep.json: its layouts beside
// their runs, and whether the ranking held.
std::string plan_sections(const std::vector<fs::path>& paths, const std::vector<results::RunResult>& runs) {
  std::string out;
  for (auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec) || !fs::exists(p / "plan.json", ec)) continue;
    try {
      auto plan = results::read_plan_file(p / "plan.json");
      out += report::plan_check_text(plan, report::check_plan(plan, runs));
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError& e) {
      spdlog::warn("skipping {}: {}", (p / "plan.json").string(), e.what());
    }
  }
  return out;
}

// Plots, each run's utilisation over time, report.md, report.csv and
// efficiency.csv in --out.
void write_out_folder(const ReportOptions& o, const report::Comparison& comparison,
                      const std::vector<report::ReferenceSet>& references,
                      const std::vector<report::EfficiencyRow>& efficiency,
                      const std::map<std::string, results::StepSeries>& steps) {
  fs::path dir = o.out;
  report::prepare_out_folder(dir);
  std::vector<std::string> images, efficiency_images;
  if (!o.no_plots && !comparison.rows.empty()) {
    auto plots = report::write_plots(comparison, dir, o.gnuplot, steps);
    for (auto& w : plots.warnings) spdlog::warn("{}", w);
    images = plots.images;
    auto eff = report::write_efficiency_plots(efficiency, dir, o.gnuplot);
    for (auto& w : eff.warnings) spdlog::warn("{}", w);
    efficiency_images = eff.images;
    for (auto& row : comparison.rows) {
      if (row.origin.empty()) continue;
      fs::path csv = fs::path(row.origin).parent_path() / "utilisation.csv";
      std::error_code ec;
      if (!fs::exists(csv, ec)) continue;
      auto u = report::write_utilisation_plot(csv, dir, "utilisation-" + row.run.run_id,
                                              row.run.run_id + ": utilisation and power over time", o.gnuplot);
      for (auto& w : u.warnings) spdlog::warn("{}", w);
      images.insert(images.end(), u.images.begin(), u.images.end());
    }
  }
  write_file_atomic(dir / "report.md", report::markdown_report(comparison, references, images) +
                                           report::efficiency_markdown(efficiency, efficiency_images));
  if (!efficiency.empty()) write_file_atomic(dir / "efficiency.csv", report::efficiency_csv(efficiency));
  write_file_atomic(dir / "report.csv", report::csv_report(comparison));
  spdlog::info("wrote {} ({} plot(s))", (dir / "report.md").string(), images.size());
}

int run_report(const ReportOptions& o) {
  if (o.paths.empty() && !o.reference)
    fail("report: give run folders or result files (e.g. results/runs), or --reference");
  std::vector<fs::path> paths(o.paths.begin(), o.paths.end());
  auto loaded = load_runs(paths);
  if (!paths.empty() && loaded.runs.empty()) {
    spdlog::error("no run could be read from the {} path(s) given", paths.size());
    return 2;
  }
  std::vector<results::RunResult> results;
  std::map<std::string, results::StepSeries> steps;
  auto comparison = compare_runs(o, loaded, results, steps);
  std::vector<report::ReferenceSet> references;
  if (o.reference) {
    std::vector<std::string> warnings;
    references = report::read_references(o.reference_dir, warnings);
    for (auto& w : warnings) spdlog::warn("{}", w);
  }
  auto efficiency = report::efficiency_rows(comparison);
  if (o.format == "text")
    fmt::print("{}", report::terminal_report(comparison, references, o.wide) +
                         report::efficiency_terminal(efficiency, o.wide));
  else if (o.format == "markdown")
    fmt::print("{}", report::markdown_report(comparison, references, {}) + report::efficiency_markdown(efficiency, {}));
  else fmt::print("{}", report::csv_report(comparison));
  print_predicted(o, comparison, efficiency);
  // CSV stays one table.
  if (o.format != "csv") fmt::print("{}", plan_sections(paths, results));
  std::fflush(stdout);
  if (!o.tensorboard.empty())
    spdlog::info("wrote {} configuration(s) for TensorBoard into {} (tensorboard --logdir {})",
                 report::write_tensorboard_report(comparison, o.tensorboard), o.tensorboard, o.tensorboard);
  if (!o.out.empty()) write_out_folder(o, comparison, references, efficiency, steps);
  return 0;
}

}  // namespace

Action add_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report", "Speedup, efficiency, weak scaling and memory of runs against a baseline run: tables and plots");
  cmd->add_option("paths", o->paths,
                  "Run folders, folders holding run folders (searched recursively, e.g. results/runs), "
                  "run.json or summary.csv files");
  cmd->add_option("--baseline", o->baseline,
                  "Run id of the baseline, or auto: the newest 1-GPU run of strategy baseline with the "
                  "same model, precision, seq length and data as most runs")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Folder to write report.md, report.csv and the plots into");
  cmd->add_option("--format", o->format, "What to print: text (aligned table), markdown or csv")
      ->check(CLI::IsMember({"text", "markdown", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--no-plots", o->no_plots, "With --out: do not draw plots");
  cmd->add_flag("--wide", o->wide,
                "Text: every column of the table, every significance pair and every cause of lost efficiency "
                "(wider than 120 columns; report.md and report.csv always have them)");
  cmd->add_flag("--reference", o->reference, "Show the published figures beside the runs");
  cmd->add_option("--reference-dir", o->reference_dir, "Where the published figures are (CSV files)")
      ->capture_default_str();
  cmd->add_option("--system", o->system, "Also show each run beside the scaling model's prediction from the "
                                         "baseline, on this system (configs/systems/*.toml)");
  cmd->add_option("--comm", o->comm, "As --system, with a bench-comm --output file as the network");
  cmd->add_option("--tensorboard", o->tensorboard,
                  "Write the configurations as TensorBoard runs with HParams summaries into this folder "
                  "(tensorboard --logdir DIR: the HParams dashboard compares them)");
  cmd->add_flag("--include-interrupted", o->include_interrupted,
                "Count runs a stop signal interrupted (status interrupted: a time limit, scancel, Ctrl-C) as "
                "finished, with their figures over the steps they did; by default they are shown without speedup "
                "or efficiency");
  cmd->add_option("--gnuplot", o->gnuplot, "The gnuplot program that draws the plots")->capture_default_str();

  return [o] { return run_report(*o); };
}

}  // namespace hpcbench::cli
