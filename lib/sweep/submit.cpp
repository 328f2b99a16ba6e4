#include "sweep/submit.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "sweep/job_script.h"

namespace hpcbench::sweep {

namespace {

struct Output {
  int status = -1;         // exit status, 128 + signal, or -1 when it could not run
  bool timed_out = false;  // killed after the time limit
  std::string text;        // stdout and stderr together
  std::string error;       // why it could not run
};

// `sh -c command` with its output captured, killed (with whatever it started:
// a site wrapper's own children) when it runs past `timeout_s`.
Output run_shell(const std::string& command, double timeout_s) {
  Output out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = std::strerror(errno);
    return out;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    out.error = std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so that a timeout kills its children too
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);  // a prompt must not wait for a keyboard
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  int st = 0;
  bool exited = false;
  for (;;) {
    // A child that exited while something it started keeps the pipe open
    // is done: stop at its exit, not at the pipe's end.
    if (!exited && ::waitpid(pid, &st, WNOHANG) == pid) exited = true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (!exited && left <= 0) {
      out.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = ::poll(&p, 1, exited ? 0 : static_cast<int>(std::min<int64_t>(left, 100)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (exited) break;
      continue;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      out.text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      if (!exited) ::waitpid(pid, &st, 0);
      exited = true;
      break;
    }
  }
  ::close(fds[0]);
  if (!out.timed_out)
    out.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return out;
}

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
    if (summary.timed_out) break;
    auto script = sweep.dir / job.script;
    auto out = run_shell(fmt::format("{} --parsable {}", cmd, shell_quote(script.string())), timeout_s);
    std::string id = out.status == 0 ? parse_job_id(out.text) : "";
    if (id.empty()) {
      job.state = "submit_failed";
      if (out.timed_out) {
        summary.timed_out = true;
        job.submit_error = fmt::format(
            "'{}' did not answer within {} s and was stopped (is slurmctld reachable? `sinfo` says); the job may "
            "still have been queued: `squeue --me -n {}-{}` shows it", cmd, timeout_s,
            sweep.options.job_name_prefix, job.name);
      } else if (out.status < 0) {
        job.submit_error = fmt::format("could not run '{}': {}", cmd, out.error);
      } else if (out.status == 0) {
        job.submit_error = fmt::format("{} exited 0 but printed no job id (neither '1234' nor 'Submitted batch "
                                       "job 1234'): {}", cmd, trim(out.text));
      } else {
        job.submit_error = fmt::format("{} exited {}: {}", cmd, out.status, trim(out.text));
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
  if (summary.timed_out)
    spdlog::error("submission stopped after sbatch timed out; the jobs not yet submitted are still written. Once "
                  "sbatch answers, `hpcbench sweep --out {} --resume` submits what is missing",
                  sweep.dir.string());
  return summary;
}

}  // namespace hpcbench::sweep
