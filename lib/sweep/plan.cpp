#include "sweep/plan.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/error.h"
#include "core/split.h"
#include "strategies/registry.h"
#include "sweep/slurm_time.h"

namespace hpcbench::sweep {

int SweepJob::replicas() const {
  auto c = strategies::parse_label(strategy, "--strategies");
  return c.spec().data_parallel_size(c.options(), {nodes, gpus_per_node});
}

namespace {

// Flags that the sweep sets for every job; repeating them would make the run
// folder land somewhere the manifest does not say.
const std::vector<std::string> kOwnedRunFlags = {"--strategy", "--results-dir", "--run-name", "--device",
                                                 "--repeats", "--repeat-group", "--repeat-index"};

}  // namespace

std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  for (auto& item : split(text)) {
    if (item.empty()) fail("{}: empty entry in '{}' (expected a comma-separated list)", flag, text);
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return out;
}

std::vector<std::string> parse_strategy_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  for (auto& c : strategies::parse_labels(text, flag)) out.push_back(c.label());
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  for (const auto& item : parse_name_list(text, flag)) {
    int v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc{} || end != item.data() + item.size() || v < 1)
      fail("{}: '{}' is not a positive whole number (in '{}')", flag, item, text);
    out.push_back(v);
  }
  return out;
}

std::vector<SweepJob> plan_jobs(const SweepOptions& opts) {
  if (opts.strategies.empty()) fail("--strategies: no strategy given");
  if (opts.nodes.empty()) fail("--nodes: no node count given");
  if (opts.gpus_per_node.empty()) fail("--gpus-per-node: no count given");
  // Labels `hpcbench run --strategy` takes, checked here so that a typo fails
  // before a whole sweep is queued.
  std::vector<strategies::Choice> choices;
  for (const auto& s : opts.strategies) {
    choices.push_back(strategies::parse_label(s, "--strategies"));
    choices.back().validate("");
  }
  for (const auto& a : opts.run_args)
    for (const auto& owned : kOwnedRunFlags)
      if (a == owned || a.starts_with(owned + "="))
        fail("'{}' after '--': the sweep sets {} itself for every job (use --strategies, --out or --cpu)",
             a, owned);

  (void)parse_slurm_time(opts.time);  // refused here, not by sbatch job after job
  if (opts.repeats < 1) fail("--repeats {}: must be at least 1", opts.repeats);
  if (opts.global_batch < 0) fail("--global-batch {}: must be positive", opts.global_batch);
  if (opts.global_batch > 0)
    for (const auto& a : opts.run_args)
      if (a == "--batch-size" || a.starts_with("--batch-size="))
        fail("'{}' after '--' with --global-batch {}: the sweep sets each job's --batch-size from it", a,
             opts.global_batch);

  auto make = [](const strategies::Choice& c, int n, int g) {
    SweepJob j;
    j.strategy = c.label();
    j.nodes = n;
    j.gpus_per_node = g;
    j.name = fmt::format("{}-{}x{}", c.file_name(), n, g);
    j.script = std::filesystem::path("jobs") / (j.name + ".sbatch");
    j.run_dir = std::filesystem::path("runs") / j.name;
    j.log = fmt::format("logs/{}-%j.out", j.name);
    return j;
  };
  // The one-device reference is always there: the report's speed-ups divide
  // by it.
  std::vector<SweepJob> jobs{make(strategies::Choice(strategies::reference_spec()), 1, 1)};
  for (const auto& c : choices) {
    if (c.spec().traits().reference) continue;
    for (int n : opts.nodes)
      for (int g : opts.gpus_per_node) {
        if (auto why = c.unsupported({n, g}); !why.empty())
          fail("--strategies {} at {} node(s) x {}: {}", c.label(), n, g, why);
        jobs.push_back(make(c, n, g));
      }
  }
  if (opts.repeats > 1) {
    std::vector<SweepJob> repeated;
    for (const auto& j : jobs)
      for (int i = 1; i <= opts.repeats; ++i) {
        SweepJob r = j;
        r.repeat_group = j.name;
        r.repeat_index = i;
        r.name = fmt::format("{}-r{}", j.name, i);
        r.script = std::filesystem::path("jobs") / (r.name + ".sbatch");
        r.run_dir = std::filesystem::path("runs") / r.name;
        r.log = fmt::format("logs/{}-%j.out", r.name);
        repeated.push_back(std::move(r));
      }
    jobs = std::move(repeated);
  }
  if (opts.global_batch > 0)
    for (const auto& j : jobs)
      if (opts.global_batch % j.replicas() != 0)
        fail("--global-batch {}: not divisible by the {} data-parallel replicas of job {}", opts.global_batch,
             j.replicas(), j.name);
  return jobs;
}

}  // namespace hpcbench::sweep
