#include "run/repeats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <signal.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/self_exec.h"
#include "core/stop_signal.h"
#include "core/text_wrap.h"
#include "distributed/launch_env.h"
#include "results/run_folder.h"
#include "run/job_results.h"

namespace hpcbench::run {

int run_repeats(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                const RanksHere& ranks_here) {
  auto layout = dist::detect_layout();
  if (layout.world_size > 1)
    fail("--repeats {}: this process is one of {} ranks of a launched job; repeat the job instead "
         "(`hpcbench sweep --repeats N` submits N jobs per configuration)",
         o.repeats, layout.world_size);
  // Claimed, not only named: a --repeats of the same name beside this one
  // (or before it) gets another id, and the report never merges the two.
  const std::string group = results::claim_repeat_group(
      cfg.results_dir, cfg.run_name.empty() ? default_run_name(choice, o.nproc_per_node > 0 ? o.nproc_per_node : 1)
                                            : cfg.run_name);
  auto base = strip_flag(own_arguments(), "--repeats");
  // A stop signal is passed to the repeat running now, which writes what it
  // measured with status interrupted; the repeats after it are not started.
  // A second one ends that repeat at once (run_self_passing_stop).
  install_stop_handlers(/*second_kills=*/false);
  std::vector<std::string> failed;
  for (int64_t i = 1; i <= o.repeats; ++i) {
    if (int sig = stop_signal()) {
      spdlog::warn("--repeats {}: stopped on {} before repeat {} of {}; the {} repeat(s) from it on were not run",
                   o.repeats, signal_name(sig), i, group, o.repeats - i + 1);
      return interrupted_exit(sig);
    }
    spdlog::info("repeat {}/{} of {}", i, o.repeats, group);
    const std::string name = fmt::format("{}-r{}", group, i);
    const std::vector<std::string> flags{"--run-name", name, "--repeat-group", group, "--repeat-index",
                                         std::to_string(i)};
    auto child = base;
    child.insert(child.end(), flags.begin(), flags.end());
    int rc = ranks_here ? ranks_here(name, group, i, flags) : run_self_passing_stop(child);
    const bool child_stopped = rc == 128 + SIGTERM || rc == 128 + SIGINT || rc == 128 + SIGUSR1;
    const int sig = stop_signal() ? stop_signal() : (child_stopped ? rc - 128 : 0);
    if (sig) {
      spdlog::warn("--repeats {}: repeat {} of {} stopped on {}; the {} repeat(s) after it were not run", o.repeats, i,
                   group, signal_name(sig), o.repeats - i);
      return interrupted_exit(sig);
    }
    if (rc != 0) {
      spdlog::error("repeat {}/{} of {} failed (exit {})", i, o.repeats, group, rc);
      failed.push_back(std::to_string(i));
    }
  }
  if (!failed.empty())
    fail("--repeats {}: repeat(s) {} of {} failed; see the log above", o.repeats, fmt::join(failed, ", "), group);
  fmt::print("{}", wrap_text(fmt::format("\n  {} repeats of {} in {}/{}-r1 ... -r{}; compare them with `hpcbench report {}`\n",
                                        o.repeats, group, cfg.results_dir, group, o.repeats, cfg.results_dir)));
  return 0;
}

}  // namespace hpcbench::run
