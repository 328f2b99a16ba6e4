#pragma once
// The run's figures on the terminal once its results are written.
#include <nlohmann/json.hpp>

#include <string>

#include "results/run_record.h"

namespace hpcbench::run {

// The summary of `r`, whose results folder is `folder` (or why it was not
// written), wrapped to the terminal's width. `notice`: run.json's
// "interrupted" for a run a signal stopped.
void print_summary(const results::RunResult& r, const std::string& folder, const nlohmann::json& notice);

}  // namespace hpcbench::run
