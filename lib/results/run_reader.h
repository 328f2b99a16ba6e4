#pragma once
// Finds and reads run results for `hpcbench report`: run folders, folders of
// run folders (any depth), run.json and summary.csv files. A file that does
// not read is skipped with a warning that names it, so one corrupt run never
// hides the others.
#include <filesystem>
#include <string>
#include <vector>

#include "results/run_record.h"

namespace hpcbench::results {

struct LoadedRun {
  RunResult result;
  std::filesystem::path origin;  // the file the row came from
};

struct LoadedRuns {
  std::vector<LoadedRun> runs;
  std::vector<std::string> warnings;  // "skipping <path>: <why>", in the order met
};

// Each path: a run folder (run.json preferred, summary.csv when run.json is
// absent or unreadable), a folder searched recursively for run folders
// (hidden entries such as in-progress ".name.partial-*" folders are
// ignored), or a run.json / CSV file. A run met twice (same file) is read once.
LoadedRuns read_results(const std::vector<std::filesystem::path>& paths);

// One file. Throws UserError saying why it cannot be read.
std::vector<RunResult> read_result_file(const std::filesystem::path& file);

// Fills figures that older files lack but that follow from the ones they
// have (per-device throughput from throughput and world size, throughput
// from samples and time), so that older runs still compare.
void fill_derived(RunResult& r);

}  // namespace hpcbench::results
