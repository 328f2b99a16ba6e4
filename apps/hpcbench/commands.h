#pragma once
// Each subcommand registers its options on the CLI11 app and returns the
// function that runs it once parsing succeeded.
#include <functional>

#include <CLI/CLI.hpp>

namespace hpcbench::cli {

using Action = std::function<int()>;

Action add_env(CLI::App& app);
Action add_run(CLI::App& app);
std::string version_text();

}  // namespace hpcbench::cli
