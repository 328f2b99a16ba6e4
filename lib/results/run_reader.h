#pragma once
// Finds and reads run results for `hpcbench report`: run folders, folders of
// run folders (any depth), run.json and summary.csv files. A file that does
// not read is skipped with a warning that names it, so one corrupt run never
// hides the others.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "results/run_record.h"

namespace hpcbench::results {

struct LoadedRun {
  // Not an aggregate, so that {result, origin} leaves the settings empty
  // without a missing-initializer warning.
  LoadedRun(RunResult r = {}, std::filesystem::path from = {}, std::map<std::string, std::string> recorded = {})
      : result(std::move(r)), origin(std::move(from)), settings(std::move(recorded)) {}
  RunResult result;
  std::filesystem::path origin;  // the file the row came from
  // run.json's "config": every setting the run ran with (key -> value as
  // text); empty for a summary.csv row.
  std::map<std::string, std::string> settings;
};

// The most a results file may hold: run.json (every step's record of a long
// run), a summary.csv (a published table or a sweep's rows).
inline constexpr size_t kMaxRunJsonBytes = size_t{512} << 20;
inline constexpr size_t kMaxSummaryCsvBytes = size_t{64} << 20;

struct LoadedRuns {
  std::vector<LoadedRun> runs;
  std::vector<std::string> warnings;  // "skipping <path>: <why>", in the order met
};

// Each path: a run folder (run.json preferred, summary.csv when run.json is
// absent or unreadable), a folder searched recursively for run folders
// (hidden entries such as in-progress ".name.partial-*" folders are
// ignored), or a run.json / CSV file. A run met twice (same file) is read once.
LoadedRuns read_results(const std::vector<std::filesystem::path>& paths);

// One file: read bounded (a regular file of at most the limits above), its
// figures checked against what a run can produce (a world size of 2^62 or
// 1e308 samples/s is a damaged file). Throws UserError saying why it cannot
// be read. `settings`: run.json's "config", when wanted.
std::vector<RunResult> read_result_file(const std::filesystem::path& file,
                                        std::map<std::string, std::string>* settings = nullptr);

// Fills figures that older files lack but that follow from the ones they
// have (per-device throughput from throughput and world size, throughput
// from samples and time), so that older runs still compare.
void fill_derived(RunResult& r);

}  // namespace hpcbench::results
