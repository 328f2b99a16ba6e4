#pragma once
// A run's folder under results/: summary.csv (one row), run.json (the row,
// the configuration, the environment, every step), loss.csv. The folder is
// assembled under a hidden temporary name and renamed into place, so a folder
// with a visible name is always complete, and an existing one is never
// overwritten.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "report/run_result.h"

namespace hpcbench::report {

// extra_files: further files (name -> content) to put in the folder, such
// as predictions.json. Returns the folder written.
std::filesystem::path write_run_folder(const std::filesystem::path& results_dir, const std::string& run_name,
                                       RunResult result, const nlohmann::json& details,
                                       const std::map<std::string, std::string>& extra_files = {});

// Throws UserError naming --run-name unless `run_name` is one ordinary path
// component: not empty, no '/', not "." or "..", not hidden (a leading '.'
// is how unfinished folders are named), short enough for a file name.
void check_run_name(const std::string& run_name);

// What write_run_folder would fail on, checked before a run starts rather
// than after it: creates `results_dir` if needed and proves that a folder can
// be made in it (and removed again). Throws UserError naming --results-dir.
void check_results_dir(const std::filesystem::path& results_dir);

}  // namespace hpcbench::report
