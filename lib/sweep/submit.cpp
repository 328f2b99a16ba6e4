#include "sweep/submit.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "sweep/job_script.h"

namespace hpcbench::sweep {

namespace {

struct Output {
  int status = -1;
  std::string text;  // stdout and stderr together
};

Output run_shell(const std::string& command) {
  Output out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.text.append(buf, n);
  int st = ::pclose(p);
  out.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string parse_job_id(const std::string& sbatch_output) {
  // Warnings can come before the id; the id is the last line of digits.
  std::istringstream in(sbatch_output);
  std::string line, id;
  while (std::getline(in, line)) {
    line = trim(line);
    std::string head = line.substr(0, line.find(';'));
    if (!head.empty() && head.find_first_not_of("0123456789") == std::string::npos) id = head;
  }
  return id;
}

SubmitSummary submit_sweep(Sweep& sweep, const std::string& sbatch) {
  std::string cmd = sbatch;
  if (cmd.empty()) {
    const char* env = std::getenv("HPCBENCH_SBATCH");
    cmd = env && *env ? env : "sbatch";
  }
  SubmitSummary summary;
  for (auto& job : sweep.jobs) {
    if (job.job_id) continue;
    auto script = sweep.dir / job.script;
    auto out = run_shell(fmt::format("{} --parsable {}", cmd, shell_quote(script.string())));
    std::string id = out.status == 0 ? parse_job_id(out.text) : "";
    if (id.empty()) {
      job.state = "submit_failed";
      job.submit_error = out.status < 0 ? fmt::format("could not run '{}'", cmd)
                                        : fmt::format("{} exited {}: {}", cmd, out.status, trim(out.text));
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
  return summary;
}

}  // namespace hpcbench::sweep
