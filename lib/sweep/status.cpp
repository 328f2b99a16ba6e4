#include "sweep/status.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>

#include "core/atomic_file.h"
#include "core/error.h"
#include "results/run_reader.h"
#include "strategies/registry.h"
#include "sweep/job_script.h"

namespace hpcbench::sweep {

namespace fs = std::filesystem;

namespace {

// squeue's state of a job ("PENDING", "RUNNING", ...), "" when it is no
// longer queued, or nullopt when squeue cannot be asked.
std::optional<std::string> squeue_state(const std::string& job_id) {
  if (!std::regex_match(job_id, std::regex(R"(\d+(_\d+)?)"))) return std::nullopt;
  const char* env = std::getenv("HPCBENCH_SQUEUE");
  std::string squeue = env && *env ? env : "squeue";
  FILE* p = ::popen((squeue + " -h -o %T -j " + job_id + " 2>/dev/null").c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  int rc = ::pclose(p);
  if (rc != 0 && out.empty()) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::string job_progress(const Sweep& sweep, const SweepJob& job) {
  std::error_code ec;
  if (fs::exists(sweep.dir / job.run_dir / "summary.csv", ec)) {
    // A time limit's results: kept as they are, but said.
    try {
      auto rows = results::read_result_file(sweep.dir / job.run_dir / "summary.csv");
      if (!rows.empty() && rows.front().status == "interrupted") return "interrupted";
    } catch (const UserError&) {
    }
    return "done";
  }
  if (job.state == "submit_failed") return "submit_failed";
  if (!job.job_id) return "written";
  if (auto s = squeue_state(*job.job_id))
    return s->empty() ? "failed" : (*s == "RUNNING" || *s == "COMPLETING" ? "running" : "pending");
  auto log = std::regex_replace(job.log, std::regex("%j"), *job.job_id);
  return fs::exists(sweep.dir / log, ec) ? "failed" : "unknown";
}

std::vector<results::RunResult> unfinished_jobs(const Sweep& sweep) {
  std::vector<results::RunResult> out;
  for (const auto& job : sweep.jobs) {
    auto progress = job_progress(sweep, job);
    if (progress == "done" || progress == "interrupted") continue;  // the report reads its folder
    results::RunResult r;
    r.run_id = job.name;
    // The label as the run would record it: the strategy and its options.
    try {
      auto c = strategies::parse_label(job.strategy, "sweep.json");
      r.strategy = c.name();
      r.strategy_options = c.options_text();
    } catch (const UserError&) {
      r.strategy = job.strategy;
    }
    r.nodes = job.nodes;
    r.gpus_per_node = job.gpus_per_node;
    r.world_size = job.world_size();
    r.slurm_job_id = job.job_id.value_or("");
    if (progress == "submit_failed" || progress == "failed") r.status = "failed";
    else if (progress == "running") r.status = "running";
    else r.status = "pending";  // written (never submitted), queued, or not yet known
    out.push_back(std::move(r));
  }
  return out;
}

ResumePlan prepare_resume(Sweep& sweep, const fs::path& dir) {
  std::error_code ec;
  auto here = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  auto recorded = fs::weakly_canonical(sweep.dir, ec);
  if (here != recorded)
    fail("--out {}: its sweep.json was written for {}, and the job scripts write their logs and results there; "
         "move the folder back or write a new sweep", dir.string(), sweep.dir.string());
  ResumePlan plan;
  for (auto& job : sweep.jobs) {
    auto progress = job_progress(sweep, job);
    if (progress == "done" || progress == "interrupted" || progress == "pending" || progress == "running" ||
        progress == "unknown") {
      plan.kept.push_back({job.name, progress});
      continue;
    }
    if (progress == "failed" && job.job_id) job.previous_job_ids.push_back(*job.job_id);
    job.job_id.reset();
    job.state = "written";
    job.submit_error.clear();
    if (!fs::exists(sweep.dir / job.script, ec)) {
      auto path = sweep.dir / job.script;
      write_file_atomic(path, render_job_script(sweep.options, job, sweep.dir));
      fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
    }
    plan.resubmit.push_back({job.name, progress});
  }
  write_manifest(sweep);
  return plan;
}

}  // namespace hpcbench::sweep
