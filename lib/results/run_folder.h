#pragma once
// A run's folder under results/: summary.csv (one row), run.json (the row,
// the configuration, the environment, every step, each rank's timing),
// loss.csv, and the files beside them. The folder is
// assembled under a hidden temporary name and renamed into place, so a folder
// with a visible name is always complete, and an existing one is never
// overwritten.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "results/run_record.h"
#include "results/steps.h"

namespace hpcbench::results {

// What a run folder holds.
struct RunFiles {
  RunFiles() = default;
  RunFiles(RunResult r) : result(std::move(r)) {}  // NOLINT: a result alone is a run folder too
  RunResult result;
  std::vector<StepRecord> steps;         // run.json's "steps", loss.csv
  std::vector<RankTiming> rank_timing;   // run.json's "rank_timing_ms" (none: not written)
  // run.json's other sections (configuration, environment, the sampler's
  // summaries, ...), beside "result", "steps" and "rank_timing_ms".
  nlohmann::json details = nlohmann::json::object();
  std::map<std::string, std::string> files;  // further files, name -> content (predictions.json, ...)
};

// Takes the run's folder name before the run: <run_name>, or the first of
// <run_name>-2, -3, ... that no finished folder has and no other run holds.
// The claim is a hidden folder made with mkdir(2), which one process alone
// can make, so two runs started at once with one name never take one
// folder; it is where write_run_folder writes, and is given back (removed
// while empty) when the process ends without results. Returns the folder
// the results will have; again for the same name, the same folder. Throws
// UserError naming --results-dir or --run-name.
std::filesystem::path claim_run_folder(const std::filesystem::path& results_dir, const std::string& run_name);

// A repeat group's id for `--repeats`: `group`, or the first of <group>-2,
// -3, ... whose repeats were never written (<id>-r1) and that no other
// --repeats holds (a hidden folder made with mkdir(2), removed when this
// process ends). Its repeats are then <id>-r1 ... -rN.
std::string claim_repeat_group(const std::filesystem::path& results_dir, const std::string& group);

// Gives back what this process still holds (an empty claimed folder, its
// repeat group's id): what happens when the process ends through its static
// destructors, for a program that ends without them (apps/hpcbench/main.cpp).
void release_claims();

// Returns the folder written: the one claim_run_folder claimed (claimed now
// when it was not).
std::filesystem::path write_run_folder(const std::filesystem::path& results_dir, const std::string& run_name,
                                       RunFiles run);

// Throws UserError naming --run-name unless `run_name` is one ordinary path
// component: not empty, no '/', not "." or "..", not hidden (a leading '.'
// is how unfinished folders are named), short enough for a file name, valid
// UTF-8 without control characters (it is written into run.json).
void check_run_name(const std::string& run_name);
// The same rule for another name that becomes a folder or a record's field
// (--repeat-group), naming `flag`.
void check_run_name(const std::string& run_name, const char* flag);

// What write_run_folder would fail on, checked before a run starts rather
// than after it: creates `results_dir` if needed and proves that a folder can
// be made in it (and removed again). Throws UserError naming --results-dir.
// The probe writes kResultsProbeBytes of data: a full disk still makes an
// empty folder, and is found here rather than after the run.
void check_results_dir(const std::filesystem::path& results_dir);
inline constexpr int64_t kResultsProbeBytes = 4096;

// Sets `bytes` aside in `results_dir` for the results (an unlinked file's
// allocated blocks, freed when the process ends however it ends) until
// write_run_folder writes them: a disk that others fill while the run
// trains cannot take the space its results need. Throws UserError naming
// --results-dir when the space is not there, before the first step.
void reserve_results_space(const std::filesystem::path& results_dir, int64_t bytes);

// What a run's folder needs: its files grow with the steps (run.json's
// records, loss.csv), the rest is small; predictions and event files are
// more, and are held for too when asked for.
inline int64_t results_space_estimate(int64_t planned_steps, bool predictions, bool tensorboard) {
  int64_t steps = planned_steps > 0 ? planned_steps : 10000;
  return (1 << 20) + steps * 2048 + (predictions ? (8 << 20) : 0) + (tensorboard ? steps * 1024 : 0);
}

}  // namespace hpcbench::results
