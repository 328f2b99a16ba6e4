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

}  // namespace hpcbench::report
