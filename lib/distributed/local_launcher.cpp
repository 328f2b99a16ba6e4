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

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/self_exec.h"
#include "core/stop_signal.h"
#include "distributed/stall.h"

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

// The first SIGINT/SIGTERM/SIGUSR1 the launcher received, and how many.
volatile sig_atomic_t g_interrupted = 0;
volatile sig_atomic_t g_signals = 0;
void on_signal(int sig) {
  if (!g_interrupted) g_interrupted = sig;
  g_signals = g_signals + 1;
}

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

// 128 + N: how a rank that stopped on signal N (and wrote what it had
// measured) exits.
bool exited_on_stop_signal(int status) {
  if (!WIFEXITED(status)) return false;
  int code = WEXITSTATUS(status);
  return code == 128 + SIGTERM || code == 128 + SIGINT || code == 128 + SIGUSR1;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("was killed by signal {} ({})", sig, ::strsignal(sig));
  }
  if (exited_on_stop_signal(status))
    return fmt::format("exited with status {} (it stopped on {})", WEXITSTATUS(status),
                       signal_name(WEXITSTATUS(status) - 128));
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

// Whether the kernel has the process stopped (SIGSTOP, SIGTSTP, a
// debugger): it never reaches a collective again, and is the rank the
// others waited for.
bool is_stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = all.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= all.size()) return false;
  char state = all[paren + 2];
  return state == 'T' || state == 't';
}

// A folder for what the ranks find about each other (distributed/stall.h),
// removed with everything in it when the launcher returns.
struct NotesDir {
  std::string path;
  NotesDir() {
    char tmpl[] = "/tmp/hpcbench-launch-XXXXXX";
    if (::mkdtemp(tmpl)) path = tmpl;
  }
  ~NotesDir() {
    if (!path.empty()) remove_tree(path);
  }
};

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
            int err_fd, const int close_fds[2], const std::string& notes) {
  std::vector<std::string> env_strings = {
      "RANK=" + std::to_string(rank),        "WORLD_SIZE=" + std::to_string(nproc),
      "LOCAL_RANK=" + std::to_string(rank),  "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
      "GROUP_RANK=0",                        "MASTER_ADDR=127.0.0.1",
      "MASTER_PORT=" + std::to_string(port), "HPCBENCH_LAUNCHER_PID=" + std::to_string(::getpid())};
  if (threads > 0) env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  if (!notes.empty()) env_strings.push_back(std::string(kLaunchNotesVariable) + "=" + notes);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) fail("launcher: fork failed for rank {}: {}", rank, std::strerror(errno));
  if (pid > 0) return pid;
  // Child: only async-signal-safe work until exec, apart from setenv/vector
  // whose allocations are safe enough because exec follows at once.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher dies -> so does the rank
  // A signal passed on before the rank's handlers exist waits for them
  // (install_stop_handlers unblocks it) rather than killing the rank.
  block_stop_signals_for_child();
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
  // A --repeats parent passes its signals on and makes the second SIGKILL:
  // a second here is the same Ctrl-C heard twice.
  const bool second_kills = !std::getenv(kStopParentVariable);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {}, old_usr1 {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGUSR1, &sa, &old_usr1);
  // One that came before these handlers (to run's own, while it checked)
  // is passed to the ranks as soon as they start.
  if (stop_signal() && !g_interrupted) {
    g_interrupted = stop_signal();
    g_signals = 1;
  }
  NotesDir notes;

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
    c.pid = spawn(args, r, options.nproc, port, options.threads_per_rank, out[1], err[1], close_fds, notes.path);
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
  // The ranks the failure is down to: stopped ones, or those the ranks
  // found missing at a collective (distributed/stall.h); empty: the first failure.
  std::vector<size_t> blamed;
  std::string blame_why;
  // When the survivors get SIGKILL if SIGTERM did not end them.
  Clock::time_point kill_at{};
  bool kill_pending = false;
  bool interrupted_handled = false, killed_on_second = false;
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

    // A signal to the launcher goes to the ranks, which stop at their next
    // step boundary and write what they measured (`run`; other commands end
    // on it); a second one ends them at once.
    if (g_interrupted && !interrupted_handled) {
      interrupted_handled = true;
      fmt::print(stderr, "[launcher] {}: passed to the {} ranks, which stop at their next step boundary (a second "
                 "signal stops them at once)\n", signal_name(g_interrupted), options.nproc);
      std::fflush(stderr);
      signal_running(children, g_interrupted);
    }
    if (g_signals >= 2 && !killed_on_second && second_kills) {
      killed_on_second = true;
      fmt::print(stderr, "[launcher] a second signal: stopping the ranks now (SIGKILL)\n");
      std::fflush(stderr);
      signal_running(children, SIGKILL);
    }
    // Under a signal of its own, ranks that stop on it (or are killed by it)
    // did what was asked: they are not the job's failure.
    auto expected = [&](int status) {
      // Stopped on a signal of its own (SLURM signals every task, a user
      // may `kill` one rank): the ranks agreed on a boundary and wrote
      // what they measured.
      if (exited_on_stop_signal(status)) return true;
      if (!g_interrupted) return false;
      if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 || exited_on_stop_signal(status);
      return WIFSIGNALED(status) && (WTERMSIG(status) == g_interrupted || WTERMSIG(status) == SIGKILL);
    };
    std::vector<size_t> failed_now;
    for (int sweep = 0; sweep < 2; ++sweep) {
      for (size_t i = 0; i < children.size(); ++i) {
        auto& c = children[i];
        if (!c.running) continue;
        int status = 0;
        if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
        c.running = false;
        c.status = status;
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !expected(status)) failed_now.push_back(i);
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
      // A rank that exits first is often one that gave up waiting: the one
      // it waited for is stopped, or the ranks named it.
      for (size_t i = 0; i < children.size(); ++i)
        if (children[i].running && is_stopped(children[i].pid)) blamed.push_back(i);
      if (!blamed.empty()) {
        blame_why = "is stopped (SIGSTOP, SIGTSTP or a debugger) and never reached its collectives";
      } else {
        for (int r : read_launch_notes(notes.path))
          if (r >= 0 && r < options.nproc && static_cast<size_t>(r) != pick) blamed.push_back(static_cast<size_t>(r));
        if (!blamed.empty()) blame_why = "did not arrive at a collective, as the other ranks found";
      }
      fmt::print(stderr, "[launcher] rank {} (pid {}) {}; stopping the other ranks\n", c.rank, c.pid,
                 describe_status(c.status));
      for (size_t i : blamed)
        fmt::print(stderr, "[launcher] rank {} (pid {}) {}\n", children[i].rank, children[i].pid, blame_why);
      std::fflush(stderr);
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
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  if (first_failure) {
    const auto& c = children[*first_failure];
    if (!blamed.empty()) {
      const auto& b = children[blamed.front()];
      fmt::print(stderr, "[launcher] job failed: rank {} of {} (pid {}) {}; rank {} {} first, waiting for it\n",
                 b.rank, options.nproc, b.pid, blame_why, c.rank, describe_status(c.status));
    } else {
      fmt::print(stderr, "[launcher] job failed: rank {} of {} (pid {}) {}\n", c.rank, options.nproc, c.pid,
                 describe_status(c.status));
    }
    return WIFSIGNALED(c.status) ? 128 + WTERMSIG(c.status) : WEXITSTATUS(c.status);
  }
  if (g_interrupted) {
    std::string how;
    for (auto& c : children)
      how += fmt::format("{}rank {} {}", how.empty() ? "" : ", ", c.rank, describe_status(c.status));
    fmt::print(stderr, "[launcher] interrupted by {} (signal {}), which it passed to the ranks: {}\n",
               signal_name(g_interrupted), static_cast<int>(g_interrupted), how);
    return 128 + g_interrupted;
  }
  for (auto& c : children)
    if (exited_on_stop_signal(c.status)) {
      std::string how;
      for (auto& d : children)
        how += fmt::format("{}rank {} {}", how.empty() ? "" : ", ", d.rank, describe_status(d.status));
      fmt::print(stderr, "[launcher] the ranks stopped on a signal sent to them, not to the launcher: {}\n", how);
      return WEXITSTATUS(c.status);
    }
  return 0;
}

}  // namespace hpcbench::dist
