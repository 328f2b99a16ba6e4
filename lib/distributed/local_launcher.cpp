#include "distributed/local_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/self_exec.h"

namespace hpcbench::dist {

namespace {

using Clock = std::chrono::steady_clock;

// Asks the kernel for a port nobody listens on; rank 0 binds it moments
// later (a narrow race that torchrun's standalone mode accepts too).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("launcher: cannot open a socket to find a free port: {}", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    fail("launcher: cannot find a free port on 127.0.0.1: {}", std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int sig) { g_interrupted = sig; }

struct Stream {
  int fd = -1;
  FILE* sink = nullptr;
  std::string pending;
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = true;
  int status = 0;
  Stream out, err;
};

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("was killed by signal {} ({})", sig, ::strsignal(sig));
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

void emit(Stream& s, int rank, bool flush_partial) {
  size_t start = 0;
  for (size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1)
    fmt::print(s.sink, "[rank {}] {}\n", rank, std::string_view(s.pending).substr(start, nl - start));
  s.pending.erase(0, start);
  if (flush_partial && !s.pending.empty()) {
    fmt::print(s.sink, "[rank {}] {}\n", rank, s.pending);
    s.pending.clear();
  }
  std::fflush(s.sink);
}

// Reads what is there; closes the stream at end of file.
void drain(Stream& s, int rank) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    ::close(s.fd);  // end of file or a real error
    s.fd = -1;
    break;
  }
  emit(s, rank, s.fd < 0);
}

pid_t spawn(const std::vector<std::string>& args, int rank, int nproc, int port, int threads, int out_fd,
            int err_fd, const int close_fds[2]) {
  std::vector<std::string> env_strings = {
      "RANK=" + std::to_string(rank),        "WORLD_SIZE=" + std::to_string(nproc),
      "LOCAL_RANK=" + std::to_string(rank),  "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
      "GROUP_RANK=0",                        "MASTER_ADDR=127.0.0.1",
      "MASTER_PORT=" + std::to_string(port), "HPCBENCH_LAUNCHER_PID=" + std::to_string(::getpid())};
  if (threads > 0) env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) fail("launcher: fork failed for rank {}: {}", rank, std::strerror(errno));
  if (pid > 0) return pid;
  // Child: only async-signal-safe work until exec, apart from setenv/vector
  // whose allocations are safe enough because exec follows at once.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher dies -> so does the rank
  if (::getppid() != parent) ::_exit(127);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(close_fds[0]);
  ::close(close_fds[1]);
  for (auto& kv : env_strings) {
    auto eq = kv.find('=');
    ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "launcher: cannot execute /proc/self/exe: %s\n", std::strerror(errno));
  ::_exit(127);
}

void signal_running(std::vector<Child>& children, int sig) {
  for (auto& c : children)
    if (c.running) ::kill(c.pid, sig);
}

}  // namespace

bool launched_as_rank() {
  const char* r = std::getenv("RANK");
  const char* w = std::getenv("WORLD_SIZE");
  return r && *r && w && *w;
}

int threads_per_rank(const std::map<std::string, std::string>& env, int nproc, int available) {
  if (auto it = env.find("OMP_NUM_THREADS"); it != env.end() && !it->second.empty()) return 0;
  return std::max(1, available / std::max(1, nproc));
}

int launch_local(const LaunchOptions& options) {
  if (options.nproc < 1) fail("{} {}: need at least 1 process", options.flag, options.nproc);
  if (options.nproc > 256) fail("{} {}: at most 256 local processes", options.flag, options.nproc);
  if (launched_as_rank())
    fail("{} inside an already launched rank (RANK and WORLD_SIZE are set): drop {} when running "
         "under torchrun or a launcher", options.flag, options.flag);
  // The children must not launch again.
  auto args = strip_flag(own_command_line(), options.flag);
  if (args.empty()) fail("launcher: cannot read this process's command line from /proc/self/cmdline");
  int port = free_port();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);

  std::vector<Child> children(static_cast<size_t>(options.nproc));
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < options.nproc; ++r) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      fail("launcher: pipe failed: {}", std::strerror(errno));
    auto& c = children[static_cast<size_t>(r)];
    c.rank = r;
    int close_fds[2] = {out[0], err[0]};
    c.pid = spawn(args, r, options.nproc, port, options.threads_per_rank, out[1], err[1], close_fds);
    ::close(out[1]);
    ::close(err[1]);
    c.out = {out[0], stdout, {}};
    c.err = {err[0], stderr, {}};
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    ::fcntl(err[0], F_SETFL, O_NONBLOCK);
    // The pids let a supervisor (and the tests) verify that nothing is left.
    fmt::print(stderr, "[launcher] rank {} pid {}\n", r, c.pid);
  }
  std::fflush(stderr);

  std::optional<size_t> first_failure;
  // When the survivors get SIGKILL if SIGTERM did not end them.
  Clock::time_point kill_at{};
  bool kill_pending = false;
  bool interrupted_handled = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Stream*, int>> owners;
    for (auto& c : children)
      for (Stream* s : {&c.out, &c.err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          owners.emplace_back(s, c.rank);
        }
    bool any_running = false;
    for (auto& c : children) any_running |= c.running;
    if (fds.empty() && !any_running) break;

    ::poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) drain(*owners[i].first, owners[i].second);

    std::vector<size_t> failed_now;
    for (int sweep = 0; sweep < 2; ++sweep) {
      for (size_t i = 0; i < children.size(); ++i) {
        auto& c = children[i];
        if (!c.running) continue;
        int status = 0;
        if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
        c.running = false;
        c.status = status;
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) failed_now.push_back(i);
      }
      // When one rank crashes its peers fail a moment later on the broken
      // connection; give them a moment so that the crash, not its echo, is
      // reported.
      if (sweep == 0 && !failed_now.empty() && !first_failure)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      else
        break;
    }
    if (!failed_now.empty() && !first_failure) {
      size_t pick = failed_now.front();
      for (size_t i : failed_now)
        if (WIFSIGNALED(children[i].status)) {
          pick = i;
          break;
        }
      first_failure = pick;
      const auto& c = children[pick];
      fmt::print(stderr, "[launcher] rank {} (pid {}) {}; stopping the other ranks\n", c.rank, c.pid,
                 describe_status(c.status));
      std::fflush(stderr);
      signal_running(children, SIGTERM);
      kill_at = Clock::now() + options.grace;
      kill_pending = true;
    }
    if (g_interrupted && !interrupted_handled) {
      interrupted_handled = true;
      signal_running(children, SIGTERM);
      kill_at = Clock::now() + options.grace;
      kill_pending = true;
    }
    if (kill_pending && Clock::now() >= kill_at) {
      signal_running(children, SIGKILL);
      kill_pending = false;
    }
  }

  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (first_failure) {
    const auto& c = children[*first_failure];
    fmt::print(stderr, "[launcher] job failed: rank {} of {} (pid {}) {}\n", c.rank, options.nproc, c.pid,
               describe_status(c.status));
    return WIFSIGNALED(c.status) ? 128 + WTERMSIG(c.status) : WEXITSTATUS(c.status);
  }
  if (g_interrupted) {
    fmt::print(stderr, "[launcher] interrupted by signal {}; the ranks were stopped\n",
               static_cast<int>(g_interrupted));
    return 128 + g_interrupted;
  }
  return 0;
}

}  // namespace hpcbench::dist
