#pragma once
// Plots of a Comparison through gnuplot: throughput, speedup against the
// ideal line, efficiency and memory per GPU, by strategy and GPU count, as
// PNG and SVG. hpcbench writes the data and a gnuplot script beside the
// images (so they can be restyled and redrawn by hand) and runs gnuplot;
// without gnuplot the data and script are still written and the outcome
// says what to install.
#include <filesystem>
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/gnuplot.h"
#include "report/noise.h"

namespace hpcbench::report {

// `gnuplot`: the program, found on PATH unless it holds a '/'.
// `steps` (by run id, from the runs' loss.csv) adds the loss and step-time
// plots against the step.
PlotOutcome write_plots(const Comparison& c, const std::filesystem::path& dir, const std::string& gnuplot = "gnuplot",
                        const std::map<std::string, results::StepSeries>& steps = {});

// The script and data alone (what write_plots hands to gnuplot); exposed
// for tests. `names` receives the plot names (without extension) drawn.
std::string plot_data(const Comparison& c);
std::string plot_script(const Comparison& c, std::vector<std::string>& names);
std::string step_plot_data(const Comparison& c, const std::map<std::string, results::StepSeries>& steps);

// A run's utilisation.csv (lib/monitor) over time: utilisation and, where
// GPUs were sampled, power, one line per GPU or rank, with a dotted line where
// each training step began and the starts of the timed steps and of
// evaluation marked. Writes <stem>.dat and <stem>.gp into `dir` and draws
// <stem>.png and <stem>.svg with gnuplot.
struct UtilisationPlotData {
  std::vector<std::string> series;  // "GPU 0 (host)", "rank 1 (host)"
  std::string data;                 // one gnuplot index per series: time, utilisation, power
  std::vector<double> step_starts;  // seconds, each training step's first sample
  double timed_start = -1, eval_start = -1;
  bool has_power = false, cpu = false;
};
UtilisationPlotData utilisation_plot_data(const std::string& csv_text);
std::string utilisation_plot_script(const UtilisationPlotData& d, const std::string& stem, const std::string& title);
PlotOutcome write_utilisation_plot(const std::filesystem::path& csv, const std::filesystem::path& dir,
                                   const std::string& stem, const std::string& title,
                                   const std::string& gnuplot = "gnuplot");

}  // namespace hpcbench::report
