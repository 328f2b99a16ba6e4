#include "sweep/status.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/process.h"
#include "core/stop_signal.h"
#include "results/run_reader.h"
#include "specs/registry.h"
#include "sweep/job_script.h"

#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace hpcbench::sweep {

namespace fs = std::filesystem;

namespace {

// How long one squeue may take: slurmctld answers in well under a second;
// a stuck one must not hang `report` or `sweep --resume`.
double squeue_timeout_s() {
  const char* env = std::getenv("HPCBENCH_SQUEUE_TIMEOUT");
  if (env && *env) {
    char* end = nullptr;
    double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0 && std::isfinite(v)) return v;
    fail("HPCBENCH_SQUEUE_TIMEOUT='{}': expected a positive number of seconds", printable(env, 64));
  }
  return kDefaultSqueueTimeoutS;
}

}  // namespace

// squeue's state of a job ("PENDING", "RUNNING", ...), "" when it is no
// longer queued, or nullopt when squeue cannot be asked. Once one squeue
// timed out the others of the same look are not run: each would hang as long.
std::optional<std::string> SqueueAsker::state(const std::string& job_id) {
  if (!job_id_problem(job_id).empty() || stuck) return std::nullopt;
  const char* env = std::getenv("HPCBENCH_SQUEUE");
  std::string squeue = env && *env ? env : "squeue";
  const double timeout = squeue_timeout_s();
  auto out = run_captured(shell_command(squeue + " -h -o %T -j " + job_id + " 2>/dev/null"), {.timeout_s = timeout});
  if (out.interrupted)
    throw Interrupted(out.interrupted, fmt::format("interrupted by {} while waiting for '{}' (job {})",
                                                   signal_name(out.interrupted), squeue, job_id));
  if (out.timed_out) {
    stuck = true;
    spdlog::warn("'{}' did not answer within {} s and was stopped (is slurmctld reachable? HPCBENCH_SQUEUE_TIMEOUT "
                 "sets the limit); the state of the queued jobs is unknown",
                 squeue, timeout);
    return std::nullopt;
  }
  // Only a state name is an answer (stderr went to /dev/null, as squeue's
  // warnings do not describe the job).
  std::string text = out.text;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  // A failed squeue (no controller, a job it no longer knows) says nothing
  // of the job: the log decides, as before squeue had a limit.
  if (out.status != 0) return std::nullopt;
  if (text.empty()) return text;
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) {
    spdlog::warn("'{}' answered '{}' for job {}, which is not a job state; its state is unknown", squeue,
                 printable(text, 200), job_id);
    return std::nullopt;
  }
  return text;
}


std::string job_progress(const Sweep& sweep, const SweepJob& job) {
  SqueueAsker squeue;
  return job_progress(sweep, job, squeue);
}

std::string job_progress(const Sweep& sweep, const SweepJob& job, SqueueAsker& squeue) {
  std::error_code ec;
  if (fs::exists(sweep.dir / job.run_dir / "summary.csv", ec)) {
    // A time limit's results: kept as they are, but said.
    try {
      auto rows = results::read_result_file(sweep.dir / job.run_dir / "summary.csv");
      if (!rows.empty() && rows.front().status == "interrupted") return "interrupted";
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError&) {
    }
    return "done";
  }
  if (job.state == "submit_failed") return "submit_failed";
  if (!job.job_id) return "written";
  if (auto s = squeue.state(*job.job_id))
    return s->empty() ? "failed" : (*s == "RUNNING" || *s == "COMPLETING" ? "running" : "pending");
  auto log = std::regex_replace(job.log, std::regex("%j"), *job.job_id);
  return fs::exists(sweep.dir / log, ec) ? "failed" : "unknown";
}

std::vector<results::RunResult> unfinished_jobs(const Sweep& sweep) {
  std::vector<results::RunResult> out;
  SqueueAsker squeue;
  for (const auto& job : sweep.jobs) {
    auto progress = job_progress(sweep, job, squeue);
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
  SqueueAsker squeue;
  for (auto& job : sweep.jobs) {
    auto progress = job_progress(sweep, job, squeue);
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
