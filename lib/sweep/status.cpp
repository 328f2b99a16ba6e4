#include "sweep/status.h"

#include <cstdio>
#include <filesystem>
#include <regex>

namespace hpcbench::sweep {

namespace {

// squeue's state of a job ("PENDING", "RUNNING", ...), "" when it is no
// longer queued, or nullopt when squeue cannot be asked.
std::optional<std::string> squeue_state(const std::string& job_id) {
  if (!std::regex_match(job_id, std::regex(R"(\d+(_\d+)?)"))) return std::nullopt;
  FILE* p = ::popen(("squeue -h -o %T -j " + job_id + " 2>/dev/null").c_str(), "r");
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

std::vector<report::RunResult> unfinished_jobs(const Sweep& sweep) {
  namespace fs = std::filesystem;
  std::vector<report::RunResult> out;
  for (const auto& job : sweep.jobs) {
    if (fs::exists(sweep.dir / job.run_dir / "summary.csv")) continue;
    report::RunResult r;
    r.run_id = job.name;
    r.strategy = job.strategy;
    r.nodes = job.nodes;
    r.gpus_per_node = job.gpus_per_node;
    r.world_size = job.world_size();
    r.slurm_job_id = job.job_id.value_or("");
    if (job.state == "submit_failed") {
      r.status = "failed";
    } else if (!job.job_id) {
      r.status = "pending";  // written, never submitted
    } else if (auto s = squeue_state(*job.job_id)) {
      r.status = s->empty() ? "failed" : (*s == "RUNNING" || *s == "COMPLETING" ? "running" : "pending");
    } else {
      auto log = std::regex_replace(job.log, std::regex("%j"), *job.job_id);
      r.status = fs::exists(sweep.dir / log) ? "failed" : "pending";
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hpcbench::sweep
