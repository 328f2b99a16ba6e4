#include "sweep_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/self_exec.h"
#include "sweep/job_script.h"

namespace hpcbench::cli {

// Every job's `hpcbench run` command line, checked by the binary the jobs run
// (`run --dry-run`: the flags, the config, the files, the evaluation set)
// before anything is written or queued: a wrong flag would otherwise fail
// each job only after it waited in the queue. Jobs whose flags differ only
// in their name are checked once.
void check_run_flags(const sweep::SweepOptions& o, const std::vector<sweep::SweepJob>& jobs) {
  std::map<std::vector<std::string>, std::vector<std::string>> checks;  // flags -> jobs
  const std::string results = (o.out_dir / "runs").string();
  for (const auto& job : jobs) {
    std::vector<std::string> args{"run", "--dry-run", "--strategy", job.strategy, "--results-dir", results};
    // The job's shape, so that the dry run checks the strategy, the batch and
    // the data on the ranks the job will have, not on one process.
    auto given = [&](const std::string& flag) {
      return std::any_of(o.run_args.begin(), o.run_args.end(),
                         [&](const std::string& a) { return a == flag || a.starts_with(flag + "="); });
    };
    if (!given("--nodes")) args.insert(args.end(), {"--nodes", std::to_string(job.nodes)});
    if (!given("--gpus-per-node")) args.insert(args.end(), {"--gpus-per-node", std::to_string(job.gpus_per_node)});
    if (o.cpu) args.insert(args.end(), {"--device", "cpu"});
    // As the job script sets it (sweep/job_script.cpp): per data-parallel replica.
    if (o.global_batch > 0) args.insert(args.end(), {"--batch-size", std::to_string(o.global_batch / job.replicas())});
    args.insert(args.end(), o.run_args.begin(), o.run_args.end());
    args.insert(args.end(), job.extra_args.begin(), job.extra_args.end());
    checks[args].push_back(job.name);
  }
  for (auto& [args, names] : checks) {
    if (int rc = run_program(o.hpcbench.string(), args, /*quiet=*/true); rc != 0) {
      std::vector<std::string> shown(args.begin() + 2, args.end());
      for (auto& a : shown) a = sweep::shell_quote(a);
      fail("the run flags of job(s) {} fail `hpcbench run`'s checks (above; exit {}): {} run {}; nothing was written "
           "or submitted", fmt::join(names, ", "), rc, o.hpcbench.string(), fmt::join(shown, " "));
    }
  }
}

}  // namespace hpcbench::cli
