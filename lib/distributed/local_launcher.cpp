#include "distributed/local_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/bounded_read.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/process.h"
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

struct Rank {
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

// The stop signal a rank ended on, whether it stopped its own way (exit
// 128 + the signal) or was ended by it (before its handlers existed); 0 for
// any other end.
int rank_stop_signal(int status) {
  if (exited_on_stop_signal(status)) return WEXITSTATUS(status) - 128;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGUSR1) return sig;
  }
  return 0;
}

std::string describe_status(int status) {
  if (exited_on_stop_signal(status))
    return fmt::format("exited with status {} (it stopped on {})", WEXITSTATUS(status),
                       signal_name(WEXITSTATUS(status) - 128));
  return describe_exit(status);
}

// Whether the kernel has the process stopped (SIGSTOP, SIGTSTP, a
// debugger): it never reaches a collective again, and is the rank the
// others waited for.
bool is_stopped(pid_t pid) {
  const std::string all = read_file_or_empty("/proc/" + std::to_string(pid) + "/stat", file_limit::kProc);
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

// Starts rank `rank` of `nproc`: this binary again with torchrun's
// variables, its output into pipes, killed if the launcher dies, and the
// stop signals blocked until its handlers exist (install_stop_handlers
// unblocks them), so that one passed on early waits rather than kills.
Rank spawn(const std::vector<std::string>& args, int rank, int nproc, int port, int threads,
           const std::string& notes) {
  Command cmd;
  cmd.program = "/proc/self/exe";
  cmd.name = args.front();
  cmd.args.assign(args.begin() + 1, args.end());
  cmd.env = {"RANK=" + std::to_string(rank),        "WORLD_SIZE=" + std::to_string(nproc),
             "LOCAL_RANK=" + std::to_string(rank),  "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
             "GROUP_RANK=0",                        "MASTER_ADDR=127.0.0.1",
             "MASTER_PORT=" + std::to_string(port), "HPCBENCH_LAUNCHER_PID=" + std::to_string(::getpid())};
  if (threads > 0) cmd.env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  if (!notes.empty()) cmd.env.push_back(std::string(kLaunchNotesVariable) + "=" + notes);
  cmd.out = cmd.err = Sink::Pipe;
  cmd.dies_with_parent = true;
  cmd.stop_signals_blocked = true;
  Child child;
  try {
    child = start(cmd);
  } catch (const UserError& e) {
    fail("launcher: rank {}: {}", rank, e.what());
  }
  ::fcntl(child.out, F_SETFL, O_NONBLOCK);
  ::fcntl(child.err, F_SETFL, O_NONBLOCK);
  return Rank{rank, child.pid, true, 0, {child.out, stdout, {}}, {child.err, stderr, {}}};
}

void signal_running(std::vector<Rank>& ranks, int sig) {
  for (auto& c : ranks)
    if (c.running) ::kill(c.pid, sig);
}

// The launcher's own handlers for SIGINT, SIGTERM and SIGUSR1 while the job
// runs; the previous ones come back when it ends.
class CatchSignals {
 public:
  CatchSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
    // One that came before these handlers (to run's own, while it checked)
    // is passed to the ranks as soon as they start.
    if (stop_signal() && !g_interrupted) {
      g_interrupted = stop_signal();
      g_signals = 1;
    }
  }
  ~CatchSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  CatchSignals(const CatchSignals&) = delete;
  CatchSignals& operator=(const CatchSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGUSR1};
  std::array<struct sigaction, 3> old_{};
};

// One job's ranks and what the launcher has decided about them.
struct Job {
  Job(const LaunchOptions& o, bool second) : options(o), second_kills(second) {}
  const LaunchOptions& options;
  // A --repeats parent passes its signals on and makes the second SIGKILL:
  // a second here is the same Ctrl-C heard twice.
  bool second_kills;
  NotesDir notes;
  std::vector<Rank> ranks;
  std::optional<size_t> first_failure;
  // The ranks the failure is down to: stopped ones, or those the ranks
  // found missing at a collective (distributed/stall.h); empty: the first failure.
  std::vector<size_t> blamed;
  std::string blame_why;
  // When the survivors get SIGKILL if SIGTERM did not end them.
  Clock::time_point kill_at{};
  bool kill_pending = false;
  bool interrupted_handled = false, killed_on_second = false;
  // A stop signal one rank received, not the launcher (a user's `kill`,
  // SLURM signalling a task): passed to the others at once, and the job's
  // exit status, before the rendezvous or after it. 0 while none.
  int rank_signal = 0;
};

void start_ranks(Job& job, const std::vector<std::string>& args, int port) {
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < job.options.nproc; ++r) {
    job.ranks.push_back(spawn(args, r, job.options.nproc, port, job.options.threads_per_rank, job.notes.path));
    // The pids let a supervisor (and the tests) verify that nothing is left.
    fmt::print(stderr, "[launcher] rank {} pid {}\n", r, job.ranks.back().pid);
  }
  std::fflush(stderr);
}

// Copies what the ranks wrote (waiting up to 100 ms for it); false once
// every stream is closed and every rank has exited.
bool pump_output(Job& job) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Stream*, int>> owners;
  for (auto& c : job.ranks)
    for (Stream* s : {&c.out, &c.err})
      if (s->fd >= 0) {
        fds.push_back({s->fd, POLLIN, 0});
        owners.emplace_back(s, c.rank);
      }
  bool any_running = false;
  for (auto& c : job.ranks) any_running |= c.running;
  if (fds.empty() && !any_running) return false;
  ::poll(fds.data(), fds.size(), 100);
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) drain(*owners[i].first, owners[i].second);
  return true;
}

// A signal to the launcher goes to the ranks, which stop at their next
// step boundary and write what they measured (`run`; other commands end
// on it); a second one ends them at once.
void pass_signals(Job& job) {
  if (g_interrupted && !job.interrupted_handled) {
    job.interrupted_handled = true;
    fmt::print(stderr, "[launcher] {}: passed to the {} ranks, which stop at their next step boundary (a second "
               "signal stops them at once)\n", signal_name(g_interrupted), job.options.nproc);
    std::fflush(stderr);
    signal_running(job.ranks, g_interrupted);
  }
  if (g_signals >= 2 && !job.killed_on_second && job.second_kills) {
    job.killed_on_second = true;
    fmt::print(stderr, "[launcher] a second signal: stopping the ranks now (SIGKILL)\n");
    std::fflush(stderr);
    signal_running(job.ranks, SIGKILL);
  }
}

// Under a signal of its own, ranks that stop on it (or are killed by it)
// did what was asked: they are not the job's failure.
bool expected_end(int status) {
  // Stopped on a signal of its own (SLURM signals every task, a user may
  // `kill` one rank): the ranks agreed on a boundary and wrote what they
  // measured.
  if (exited_on_stop_signal(status)) return true;
  if (!g_interrupted) return false;
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 || exited_on_stop_signal(status);
  return WIFSIGNALED(status) && (WTERMSIG(status) == g_interrupted || WTERMSIG(status) == SIGKILL);
}

// A rank that stopped on a signal of its own: the others get the same
// signal now, so that none waits for it (at the rendezvous a missing peer
// would be waited for until --connect-timeout).
void on_rank_signal(Job& job, size_t i, int sig) {
  job.rank_signal = sig;
  fmt::print(stderr, "[launcher] rank {} (pid {}) {}; passing {} to the other ranks\n", job.ranks[i].rank,
             job.ranks[i].pid, describe_status(job.ranks[i].status), signal_name(sig));
  std::fflush(stderr);
  signal_running(job.ranks, sig);
}

// The ranks that exited since the last look and failed.
std::vector<size_t> reap(Job& job) {
  std::vector<size_t> failed_now;
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      auto& c = job.ranks[i];
      int status = 0;
      if (!c.running || ::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      c.status = status;
      if (const int sig = rank_stop_signal(status); sig && !g_interrupted && !job.rank_signal && !job.first_failure) {
        on_rank_signal(job, i, sig);
        continue;
      }
      // Once a rank stopped on a signal, the others' ends follow from it (a
      // peer gone from the rendezvous): said in the summary, not a failure.
      if (job.rank_signal) continue;
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !expected_end(status)) failed_now.push_back(i);
    }
    // When one rank crashes its peers fail a moment later on the broken
    // connection; give them a moment so that the crash, not its echo, is
    // reported.
    if (sweep == 0 && !failed_now.empty() && !job.first_failure)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    else
      break;
  }
  return failed_now;
}

// The job's first failure: which rank it is down to, said, and the others
// asked to stop (SIGKILL after the grace period).
void on_first_failure(Job& job, const std::vector<size_t>& failed_now) {
  size_t pick = failed_now.front();
  for (size_t i : failed_now)
    if (WIFSIGNALED(job.ranks[i].status)) {
      pick = i;
      break;
    }
  job.first_failure = pick;
  const auto& c = job.ranks[pick];
  // A rank that exits first is often one that gave up waiting: the one it
  // waited for is stopped, or the ranks named it.
  for (size_t i = 0; i < job.ranks.size(); ++i)
    if (job.ranks[i].running && is_stopped(job.ranks[i].pid)) job.blamed.push_back(i);
  if (!job.blamed.empty()) {
    job.blame_why = "is stopped (SIGSTOP, SIGTSTP or a debugger) and never reached its collectives";
  } else {
    for (int r : read_launch_notes(job.notes.path))
      if (r >= 0 && r < job.options.nproc && static_cast<size_t>(r) != pick) job.blamed.push_back(static_cast<size_t>(r));
    if (!job.blamed.empty()) job.blame_why = "did not arrive at a collective, as the other ranks found";
  }
  fmt::print(stderr, "[launcher] rank {} (pid {}) {}; stopping the other ranks\n", c.rank, c.pid,
             describe_status(c.status));
  for (size_t i : job.blamed)
    fmt::print(stderr, "[launcher] rank {} (pid {}) {}\n", job.ranks[i].rank, job.ranks[i].pid, job.blame_why);
  std::fflush(stderr);
  signal_running(job.ranks, SIGTERM);
  job.kill_at = Clock::now() + job.options.grace;
  job.kill_pending = true;
}

std::string how_each_ended(const std::vector<Rank>& ranks) {
  std::string how;
  for (auto& c : ranks) how += fmt::format("{}rank {} {}", how.empty() ? "" : ", ", c.rank, describe_status(c.status));
  return how;
}

// The launcher's exit status once every rank has ended, said on stderr
// where it is not 0.
int job_status(const Job& job) {
  if (job.first_failure) {
    const auto& c = job.ranks[*job.first_failure];
    if (!job.blamed.empty()) {
      const auto& b = job.ranks[job.blamed.front()];
      fmt::print(stderr, "[launcher] job failed: rank {} of {} (pid {}) {}; rank {} {} first, waiting for it\n",
                 b.rank, job.options.nproc, b.pid, job.blame_why, c.rank, describe_status(c.status));
    } else {
      fmt::print(stderr, "[launcher] job failed: rank {} of {} (pid {}) {}\n", c.rank, job.options.nproc, c.pid,
                 describe_status(c.status));
    }
    return exit_code(c.status);
  }
  if (g_interrupted) {
    fmt::print(stderr, "[launcher] interrupted by {} (signal {}), which it passed to the ranks: {}\n",
               signal_name(g_interrupted), static_cast<int>(g_interrupted), how_each_ended(job.ranks));
    return 128 + g_interrupted;
  }
  if (job.rank_signal) {
    fmt::print(stderr, "[launcher] the ranks stopped on {}, sent to a rank, not to the launcher: {}\n",
               signal_name(job.rank_signal), how_each_ended(job.ranks));
    return 128 + job.rank_signal;
  }
  return 0;
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
  for (auto& f : options.drop_flags) args = strip_flag(args, f);
  if (!args.empty()) args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  if (args.empty()) fail("launcher: cannot read this process's command line from /proc/self/cmdline");
  int port = free_port();
  CatchSignals catch_signals;
  Job job(options, !std::getenv(kStopParentVariable));
  start_ranks(job, args, port);
  while (pump_output(job)) {
    pass_signals(job);
    auto failed_now = reap(job);
    if (!failed_now.empty() && !job.first_failure) on_first_failure(job, failed_now);
    if (job.kill_pending && Clock::now() >= job.kill_at) {
      signal_running(job.ranks, SIGKILL);
      job.kill_pending = false;
    }
  }
  return job_status(job);
}

}  // namespace hpcbench::dist
