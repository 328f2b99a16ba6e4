#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/stop_signal.h"

extern char** environ;

namespace hpcbench {

namespace fs = std::filesystem;

namespace {

// What failed in the child before its program ran, passed back through a
// close-on-exec pipe that exec closes when it succeeds.
enum class Stage : int { Exec = 0, Folder, File, DevNull };

struct ChildFailure {
  Stage stage;
  int error;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// This process's environment with `overrides` ("NAME=value") replacing
// the variables of their names.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  auto name_of = [](std::string_view kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                [&](const std::string& o) { return name_of(o) == name_of(kv); });
    if (!replaced) out.emplace_back(kv);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child's side between fork and exec: async-signal-safe calls only
// (this process may have other threads, holding locks the child would
// never see released). Never returns.
[[noreturn]] void become(const Command& cmd, pid_t parent, const int out_pipe[2], const int err_pipe[2],
                         int report_fd, char* const* argv, char* const* envp) {
  auto die = [&](Stage stage) {
    ChildFailure f{stage, errno};
    ssize_t ignored = ::write(report_fd, &f, sizeof f);
    (void)ignored;
    ::_exit(127);
  };
  if (cmd.dies_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // it died before the line above
  }
  if (cmd.own_group) ::setpgid(0, 0);
  if (cmd.stop_signals_default) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGINT, &dfl, nullptr);
  }
  if (cmd.stop_signals_blocked) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, sig);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
  }
  // `fd` as `target`, open across exec (dup2 clears close-on-exec; an fd
  // that already is the target keeps its flag unless cleared).
  auto place = [](int fd, int target) {
    return fd == target ? ::fcntl(fd, F_SETFD, 0) : ::dup2(fd, target);
  };
  if (cmd.stdin_null) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || place(fd, STDIN_FILENO) < 0) die(Stage::DevNull);
  }
  auto route = [&](Sink sink, int target, int pipe_write) {
    int fd = -1;
    switch (sink) {
      case Sink::Inherit: return;
      case Sink::Stdout: fd = STDOUT_FILENO; break;
      case Sink::Pipe: fd = pipe_write; break;
      case Sink::Null:
        if ((fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) die(Stage::DevNull);
        break;
      case Sink::File:
        if ((fd = ::open(cmd.file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) die(Stage::File);
        break;
    }
    if (place(fd, target) < 0) die(Stage::File);
  };
  route(cmd.out, STDOUT_FILENO, out_pipe[1]);
  route(cmd.err, STDERR_FILENO, err_pipe[1]);
  if (!cmd.cwd.empty() && ::chdir(cmd.cwd.c_str()) != 0) die(Stage::Folder);
  ::execve(cmd.program.c_str(), argv, envp);
  die(Stage::Exec);
  ::_exit(127);  // die does not return; the compiler cannot tell
}

std::string failure_text(const Command& cmd, const ChildFailure& f) {
  const char* why = std::strerror(f.error);
  switch (f.stage) {
    case Stage::Folder: return fmt::format("cannot enter {}: {}", cmd.cwd.string(), why);
    case Stage::File: return fmt::format("cannot write {}: {}", cmd.file.string(), why);
    case Stage::DevNull: return fmt::format("cannot open /dev/null: {}", why);
    case Stage::Exec: break;
  }
  return why;
}

}  // namespace

Child start(const Command& cmd) {
  std::vector<std::string> arg_strings{cmd.name.empty() ? cmd.program : cmd.name};
  arg_strings.insert(arg_strings.end(), cmd.args.begin(), cmd.args.end());
  auto argv = pointers(arg_strings);
  auto env_strings = environment_with(cmd.env);
  auto envp = pointers(env_strings);

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &report[0], &report[1]}) close_fd(*fd);
  };
  auto open_pipe = [&](int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      int e = errno;
      close_all();
      fail("cannot start {}: a pipe: {}", cmd.program, std::strerror(e));
    }
  };
  if (cmd.out == Sink::Pipe) open_pipe(out_pipe);
  if (cmd.err == Sink::Pipe) open_pipe(err_pipe);
  open_pipe(report);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    close_all();
    fail("cannot start {}: {}", cmd.program, std::strerror(e));
  }
  if (pid == 0) become(cmd, parent, out_pipe, err_pipe, report[1], argv.data(), envp.data());

  // Both sides set the group, so that it is in place whichever runs first.
  if (cmd.own_group) ::setpgid(pid, pid);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(report[1]);
  ChildFailure failure{};
  ssize_t n;
  while ((n = ::read(report[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  close_fd(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    wait_for(pid);
    close_all();
    fail("cannot start {}: {}", cmd.program, failure_text(cmd, failure));
  }
  return Child{pid, out_pipe[0], err_pipe[0]};
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail("cannot wait for process {}: {}", pid, std::strerror(errno));
  return status;
}

int exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 128 + (WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0);
}

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return fmt::format("was killed by signal {} ({})", sig, ::strsignal(sig));
  }
  return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
}

int run(const Command& cmd) { return exit_code(wait_for(start(cmd).pid)); }

int run_passing_stop(const Command& cmd) {
  const pid_t pid = start(cmd).pid;
  int passed = 0, status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) fail("cannot wait for {}: {}", cmd.program, std::strerror(errno));
    if (int n = stop_signal_count(); n > passed) {
      ::kill(pid, passed == 0 ? stop_signal() : SIGKILL);
      passed = n;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code(status);
}

namespace {

// The capture's clock and the reasons to end the child early.
struct CaptureWatch {
  std::chrono::steady_clock::time_point deadline;
  bool stop_on_signal;
  pid_t target;  // what kill() is given: the child, or its group

  int64_t left_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  }
  int stop() const { return stop_on_signal ? stop_signal() : 0; }
  // Ends the child when its time is up or a stop signal came; true then.
  bool end_if_due(pid_t pid, int& status, Captured& out) const {
    if (left_ms() > 0 && stop() == 0) return false;
    if (int sig = stop()) out.interrupted = sig;
    else out.timed_out = true;
    ::kill(target, SIGKILL);
    ::waitpid(pid, &status, 0);
    return true;
  }
};

}  // namespace

Captured run_captured(Command cmd, const CaptureLimits& limits) {
  Captured out;
  std::optional<StopSignalScope> catch_stop;
  if (limits.stop_on_signal) catch_stop.emplace();
  cmd.out = Sink::Pipe;
  if (cmd.err == Sink::Pipe) cmd.err = Sink::Stdout;
  Child child;
  try {
    child = start(cmd);
  } catch (const UserError& e) {
    out.error = e.what();
    return out;
  }
  const pid_t pid = child.pid;
  using clock = std::chrono::steady_clock;
  CaptureWatch watch{limits.timeout_s > 0
                         ? clock::now() + std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_s * 1000))
                         : clock::time_point::max(),
                     limits.stop_on_signal, cmd.own_group ? -pid : pid};
  int st = 0;
  bool exited = false, ended = false;
  while (!ended) {
    if (!exited && ::waitpid(pid, &st, WNOHANG) == pid) exited = true;
    if (!exited && watch.end_if_due(pid, st, out)) break;
    pollfd p{child.out, POLLIN, 0};
    int r = ::poll(&p, 1, exited ? 0 : static_cast<int>(std::clamp<int64_t>(watch.left_ms(), 0, 100)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ended = exited;
      continue;
    }
    char buf[4096];
    ssize_t n = ::read(child.out, buf, sizeof(buf));
    if (n > 0) {
      if (out.text.size() < limits.max_bytes)
        out.text.append(buf, std::min(static_cast<size_t>(n), limits.max_bytes - out.text.size()));
    } else if (n == 0 || errno != EINTR) {
      // The pipe closed: wait for the exit itself, still bounded.
      while (!exited && ::waitpid(pid, &st, WNOHANG) != pid) {
        if (watch.end_if_due(pid, st, out)) break;
        ::usleep(20000);
      }
      ended = true;
    }
  }
  ::close(child.out);
  if (!out.timed_out && !out.interrupted) out.status = exit_code(st);
  return out;
}

Command shell_command(const std::string& command) {
  Command c;
  c.program = "/bin/sh";
  c.name = "sh";
  c.args = {"-c", command};
  c.out = Sink::Pipe;
  c.err = Sink::Stdout;
  c.stdin_null = true;
  c.own_group = true;
  c.stop_signals_default = true;
  return c;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string d;
  while (std::getline(dirs, d, ':')) {
    fs::path p = fs::path(d.empty() ? "." : d) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace hpcbench
