#include "sweep/submit.h"

#include <cstdlib>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/printable.h"
#include "core/process.h"
#include "core/stop_signal.h"
#include "sweep/job_script.h"

namespace hpcbench::sweep {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

}  // namespace

std::string parse_job_id(const std::string& sbatch_output) {
  // Warnings can come before the id; the id is on the last line that holds
  // one, in either of sbatch's two forms.
  static const std::regex human(R"(^Submitted batch job (\d+)( on cluster \S+)?$)");
  std::istringstream in(sbatch_output);
  std::string line, id;
  while (std::getline(in, line)) {
    line = trim(line);
    std::string head = line.substr(0, line.find(';'));
    std::smatch m;
    if (!head.empty() && head.find_first_not_of("0123456789") == std::string::npos) id = head;
    else if (std::regex_match(line, m, human)) id = m[1];
  }
  return id;
}

SubmitSummary submit_sweep(Sweep& sweep, const std::string& sbatch, double timeout_s) {
  if (!(timeout_s > 0)) fail("--sbatch-timeout {}: must be a positive number of seconds", timeout_s);
  std::string cmd = sbatch;
  if (cmd.empty()) {
    const char* env = std::getenv("HPCBENCH_SBATCH");
    cmd = env && *env ? env : "sbatch";
  }
  SubmitSummary summary;
  for (auto& job : sweep.jobs) {
    if (job.job_id) continue;
    if (summary.timed_out || summary.interrupted) break;
    // Only a script of this sweep's own jobs/ folder is given to sbatch,
    // whatever sweep.json says.
    auto script = script_inside(sweep, job);
    // Its own group, killed whole (a site wrapper's children too) past the
    // limit or on SIGTERM/SIGINT to hpcbench.
    auto out = run_captured(shell_command(fmt::format("{} --parsable {}", cmd, shell_quote(script.string()))),
                            {.timeout_s = timeout_s});
    // sbatch's words are bytes of any encoding: kept printable, never trusted.
    const std::string said = printable(trim(out.text));
    std::string id = out.status == 0 ? parse_job_id(out.text) : "";
    std::string bad_id;
    if (!id.empty()) {
      if (auto why = job_id_problem(id); !why.empty()) bad_id = why;
      for (const auto& other : sweep.jobs)
        if (bad_id.empty() && &other != &job && other.job_id == id)
          bad_id = fmt::format("it is the id of job {} already (sbatch never gives one id twice)", other.name);
    }
    if (id.empty() || !bad_id.empty()) {
      job.state = "submit_failed";
      if (!bad_id.empty()) {
        job.submit_error = fmt::format("{} answered job id '{}', which is not a SLURM job id: {}; the job may still "
                                       "have been queued: `squeue --me -n {}-{}` shows it",
                                       cmd, printable(id, 64), bad_id, sweep.options.job_name_prefix, job.name);
      } else if (out.interrupted) {
        summary.interrupted = out.interrupted;
        job.submit_error = fmt::format(
            "interrupted by {} while '{}' ran; the job may still have been queued: `squeue --me -n {}-{}` shows it",
            signal_name(out.interrupted), cmd, sweep.options.job_name_prefix, job.name);
      } else if (out.timed_out) {
        summary.timed_out = true;
        job.submit_error = fmt::format(
            "'{}' did not answer within {} s and was stopped (is slurmctld reachable? `sinfo` says); the job may "
            "still have been queued: `squeue --me -n {}-{}` shows it", cmd, timeout_s,
            sweep.options.job_name_prefix, job.name);
      } else if (out.status < 0) {
        job.submit_error = fmt::format("could not run '{}': {}", cmd, out.error);
      } else if (out.status == 0) {
        job.submit_error = fmt::format("{} exited 0 but printed no job id (neither '1234' nor 'Submitted batch "
                                       "job 1234'): {}", cmd, said);
      } else {
        job.submit_error = fmt::format("{} exited {}: {}", cmd, out.status, said);
      }
      spdlog::error("{}: {}", job.name, job.submit_error);
      ++summary.failed;
    } else {
      job.job_id = id;
      job.state = "submitted";
      job.submit_error.clear();
      spdlog::info("{}: job {}", job.name, id);
      ++summary.submitted;
    }
    write_manifest(sweep);
  }
  if (summary.interrupted)
    throw Interrupted(summary.interrupted,
                      fmt::format("submission interrupted by {}; sweep.json records every job submitted so far, and "
                                  "`hpcbench sweep --out {} --resume` submits the rest",
                                  signal_name(summary.interrupted), sweep.dir.string()));
  if (summary.timed_out)
    spdlog::error("submission stopped after sbatch timed out; the jobs not yet submitted are still written. Once "
                  "sbatch answers, `hpcbench sweep --out {} --resume` submits what is missing",
                  sweep.dir.string());
  return summary;
}

}  // namespace hpcbench::sweep
