#pragma once
// Each subcommand registers its options on the CLI11 app and returns the
// function that runs it once parsing succeeded.
#include <functional>

#include <CLI/CLI.hpp>

namespace hpcbench::cli {

using Action = std::function<int()>;

Action add_env(CLI::App& app);
Action add_data(CLI::App& app);
Action add_fetch(CLI::App& app);
Action add_bench_comm(CLI::App& app);
Action add_run(CLI::App& app);
Action add_main(CLI::App& app);
Action add_sweep(CLI::App& app);
Action add_report(CLI::App& app);
Action add_predict(CLI::App& app);
Action add_plan(CLI::App& app);

std::string version_text();

}  // namespace hpcbench::cli
