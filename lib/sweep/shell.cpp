#include "sweep/shell.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/stop_signal.h"

namespace hpcbench::sweep {

ShellOutput run_shell(const std::string& command, double timeout_s) {
  ShellOutput out;
  StopSignalScope catch_stop;
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
    // What the handlers of hpcbench catch, the program gets as it would from a shell.
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
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
    if (!exited && (left <= 0 || stop_signal() != 0)) {
      if (left <= 0) out.timed_out = true;
      else out.interrupted = stop_signal();
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
      if (out.text.size() < kMaxShellOutput)
        out.text.append(buf, std::min(static_cast<size_t>(n), kMaxShellOutput - out.text.size()));
    } else if (n == 0 || errno != EINTR) {
      if (!exited) {
        // The pipe closed: wait for the exit itself, still bounded.
        while (::waitpid(pid, &st, WNOHANG) != pid) {
          if (clock::now() >= deadline || stop_signal() != 0) {
            if (stop_signal() != 0) out.interrupted = stop_signal();
            else out.timed_out = true;
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            break;
          }
          ::usleep(20000);
        }
      }
      exited = true;
      break;
    }
  }
  ::close(fds[0]);
  if (!out.timed_out && !out.interrupted)
    out.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return out;
}

}  // namespace hpcbench::sweep
