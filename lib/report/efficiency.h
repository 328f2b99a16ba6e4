#pragma once
// Where the efficiency went: each row's lost strong-scaling efficiency split
// into named parts that add up to it (results/README.md, "Where the
// efficiency went", defines every part from run.json's fields).
//
// For a row against its baseline at the same global batch, the ideal step is
// the baseline's divided by the devices; the measured step is the one the
// table's efficiency divides (global batch / the row's throughput), so that
// efficiency = ideal / measured exactly. measured - ideal is split into the
// parts below, each in ms per step and in points of efficiency (ms / measured
// x 100; the points add up to 100 - efficiency in %).
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/plot.h"

namespace hpcbench::report {

// Recompute: activation checkpointing's second forward of every encoder
// layer inside the backward (about a third more FLOPs), its own cause, not
// compute inflation, where the run recomputes and its baseline does not.
enum class Part { Exposed = 0, Compute, Optimizer, Waiting, Data, Recompute, Unexplained, Count };
inline constexpr size_t kParts = static_cast<size_t>(Part::Count);
const char* part_name(Part p);   // "exposed communication", ...
const char* part_key(Part p);    // "exposed_comm", ... (CSV columns, plot keys)

// One rank's means over the timed steps, its own step (not the slowest
// rank's). data, compute (forward + backward), other (grad_sync +
// optimizer) are the phases' own work: the phase minus the communication
// exposed inside it; exposed is the rank's comm_exposed_ms.
struct RankTime {
  double step = 0, data = 0, compute = 0, other = 0, exposed = 0;
  double forward = 0;  // the forward phase's own work, inside compute
  double busy() const { return step - exposed; }
};

// What one run's files say about its time.
struct RunTiming {
  double job_step_ms = 0;       // mean over timed steps of the slowest rank's step (step_ms_mean)
  std::vector<RankTime> ranks;  // run.json's rank_timing_ms, rank order
  // false: a file without rank_timing_ms (older, or summary.csv alone): one
  // rank from the phase medians, with the exposed time still inside the
  // phases; the accounting then does not close and the rest is unexplained.
  bool exact = true;
  bool recomputes = false;  // activation checkpointing: the backward runs each layer's forward again
};

// From the run's run.json (beside `origin` when that is a summary.csv), or
// from the result's medians when it has no rank_timing_ms.
RunTiming read_run_timing(const results::RunResult& r, const std::filesystem::path& origin);

struct Decomposition {
  double measured_ms = 0, ideal_ms = 0;
  std::array<double, kParts> ms{};
  size_t reference_rank = 0;  // the rank whose phases the parts use (least busy)
  bool exact = true;
  double efficiency() const { return measured_ms > 0 ? ideal_ms / measured_ms : 0; }
  double points(Part p) const { return measured_ms > 0 ? 100 * ms[size_t(p)] / measured_ms : 0; }
  double lost_ms() const { return measured_ms - ideal_ms; }
};

// The arithmetic alone: `scale` = devices / the baseline's devices.
// measured_ms and ideal_ms as above; the parts from `run` against `base`
// (its rank 0) divided by scale; unexplained = what the parts leave of
// measured - ideal.
Decomposition decompose(double measured_ms, double ideal_ms, const RunTiming& run, const RunTiming& base,
                        double scale);

struct EfficiencyRow {
  std::string name;       // row_name
  std::string strategy;   // strategy and options ("zero stage=3, prefetch=off")
  int64_t devices = 0;
  Decomposition d;
  std::string sentence;   // the dominant cause and what addresses it
  RunTiming base_timing;  // the baseline's, which the ideal step divides (for predictions beside it)
  double scale = 1;       // devices / the baseline's devices
};

// Every row with an efficiency (strongly comparable, status ok, not the
// baseline), in table order.
std::vector<EfficiencyRow> efficiency_rows(const Comparison& c);

// Parts by size, largest first (unexplained among them).
std::vector<Part> parts_by_size(const Decomposition& d);
// The largest named part (unexplained only where nothing else is named).
Part largest_cause(const Decomposition& d);
// "exposed comm 12.3" (short name, points), "none" when nothing is lost: the
// headline table's cell.
std::string largest_cause_cell(const Decomposition& d);
// "exposed communication 12.3 pts (4.1 ms) · compute inflation ..."
std::string causes_cell(const Decomposition& d);
// The dominant named cause and the flag that addresses it, for a strategy.
std::string dominant_sentence(const std::string& name, const std::string& strategy, const Decomposition& d);

// The compact table (one line per row), and the sentences under it. Not
// `wide`: the sentences alone, wrapped to 120 columns (the table of every
// cause is wider; report.md and `report --wide` have it).
std::string efficiency_terminal(const std::vector<EfficiencyRow>& rows, bool wide = true);
std::string efficiency_markdown(const std::vector<EfficiencyRow>& rows, const std::vector<std::string>& images);
// One line per row: every part in ms and points (efficiency.csv).
std::string efficiency_csv(const std::vector<EfficiencyRow>& rows);

// Stacked bars, one plot per strategy (efficiency-<strategy>.png/.svg): the
// ideal step and each part on top of it in ms per step, a bar per row, the
// measured step marked. Writes efficiency.dat and efficiency.gp beside them.
std::string efficiency_plot_script(const std::vector<EfficiencyRow>& rows, std::vector<std::string>& names);
std::string efficiency_plot_data(const std::vector<EfficiencyRow>& rows);
PlotOutcome write_efficiency_plots(const std::vector<EfficiencyRow>& rows, const std::filesystem::path& dir,
                                   const std::string& gnuplot = "gnuplot");

}  // namespace hpcbench::report
