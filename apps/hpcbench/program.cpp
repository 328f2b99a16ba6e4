#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <c10/util/Exception.h>

#include <iostream>

#include "commands.h"
#include "program.h"
#include "core/error.h"
#include "core/number_text.h"
#include "core/host_allocator.h"
#include "core/text_wrap.h"

namespace hpcbench::cli {

namespace {

// Every numeric flag of every command read by the one rule for numbers
// (core/settings.h): CLI11's own cast turns --repeats 99999999999999999999
// into the largest int64 and --connect-timeout 1e999 into infinity, silently.
// The text is checked before CLI11 converts it, the settings' flags too
// (set_from_string says the same of their TOML values).
void check_numbers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    std::string type = opt->get_type_name();
    if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
    opt->check(CLI::Validator(
        [type](std::string& text) {
          // Text that is no number at all is left to the option's own parser,
          // whose message ("--max-steps abc: expected an integer") stays.
          auto why = hpcbench::number_problem(text, type);
          const bool refused = why.starts_with("out of range") || why == "expected a finite number";
          return refused ? fmt::format("'{}' is {}", text, why) : std::string();
        },
        "", "number"));
  }
  for (CLI::App* sub : app.get_subcommands({})) check_numbers(*sub);
}

}  // namespace

int run_program(int argc, char** argv) {
  hpcbench::keep_freed_memory_in_heap();
  // Logs go to stderr so that tables and reports on stdout can be piped.
  spdlog::set_default_logger(spdlog::stderr_color_mt("hpcbench"));
  // Wrapped to 120 columns, so that a terminal of that width shows each
  // line whole (the per-step lines and the warnings are longer).
  spdlog::set_formatter(
      hpcbench::wrapping_log_formatter("[%Y-%m-%d %H:%M:%S] [%^%l%$] %v", hpcbench::output_columns()));
  CLI::App app{"hpcbench: how parallel training strategies scale on BERT/SQuAD"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", [] { return hpcbench::cli::version_text(); });

  std::vector<std::pair<CLI::App*, hpcbench::cli::Action>> commands;
  auto add = [&](hpcbench::cli::Action (*fn)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    auto action = fn(app);
    commands.emplace_back(app.get_subcommands({}).at(before), std::move(action));
  };
  add(hpcbench::cli::add_env);
  add(hpcbench::cli::add_data);
  add(hpcbench::cli::add_fetch);
  add(hpcbench::cli::add_bench_comm);
  add(hpcbench::cli::add_sweep);
  add(hpcbench::cli::add_report);
  add(hpcbench::cli::add_predict);
  add(hpcbench::cli::add_plan);
  add(hpcbench::cli::add_run);
  add(hpcbench::cli::add_main);
  check_numbers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 0;
  }
  try {
    for (auto& [sub, action] : commands)
      if (sub->parsed()) return action();
  } catch (const hpcbench::Interrupted& e) {
    spdlog::warn("{}", e.what());
    return 128 + e.signal();
  } catch (const hpcbench::UserError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const c10::Error& e) {
    spdlog::error("torch: {}", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return 1;
  }
  return 0;
}

}  // namespace hpcbench::cli
