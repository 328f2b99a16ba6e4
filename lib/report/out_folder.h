#pragma once
// `report --out`: the folder is the report's, written whole. Plots are
// named by the runs (utilisation-<run>.svg), so a second report into the
// folder of a first left the first's plots beside its own, and report.md
// was read with figures of runs it no longer held.
#include <filesystem>

namespace hpcbench::report {

// Makes `dir` ready for a new report: a folder that is missing or empty is
// taken; one that holds an earlier report (its marker, or only what a report
// writes: report.md, report.csv, efficiency.csv, plots, their data, scripts
// and gnuplot logs) is emptied; anything else is refused (UserError naming
// --out and a file that is not a report's), before anything is written.
// Leaves the marker in it.
void prepare_out_folder(const std::filesystem::path& dir);

}  // namespace hpcbench::report
