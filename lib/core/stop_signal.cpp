#include "core/stop_signal.h"

#include <signal.h>

#include <atomic>
#include <string>

#include "core/error.h"

namespace hpcbench {

namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_second_kills{false};
std::atomic<int> g_count{0};
std::atomic<bool> g_installed{false};

void on_stop_signal(int sig) {
  g_count.fetch_add(1);
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) return;
  if (!g_second_kills.load()) return;
  // The second request: what the signal would have done without a handler.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_stop_handlers(bool second_kills) {
  g_second_kills = second_kills;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // Restarted system calls: a signal in the middle of a collective's socket
  // read must not turn into a failed collective.
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(sig, &sa, nullptr);
  g_installed = true;
  // A launcher or a --repeats parent started this process with them blocked
  // (Command::stop_signals_blocked, core/process.h): one that came meanwhile
  // arrives now.
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

int stop_signal_count() { return g_count.load(); }

void throw_if_stopped(const std::string& during) {
  if (int sig = stop_signal()) throw Interrupted(sig, "interrupted by " + signal_name(sig) + " while " + during);
}

struct StopSignalScope::Saved {
  struct sigaction term {}, intr {};
};

StopSignalScope::StopSignalScope() {
  if (g_installed.load()) return;
  saved_ = new Saved;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  g_second_kills = true;
  ::sigaction(SIGTERM, &sa, &saved_->term);
  ::sigaction(SIGINT, &sa, &saved_->intr);
  installed_ = true;
}

StopSignalScope::~StopSignalScope() {
  if (!installed_) return;
  ::sigaction(SIGTERM, &saved_->term, nullptr);
  ::sigaction(SIGINT, &saved_->intr, nullptr);
  delete saved_;
}

int stop_signal() { return g_signal.load(); }

void note_stop(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig > 0 ? sig : SIGTERM);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGKILL: return "SIGKILL";
    case SIGSTOP: return "SIGSTOP";
    default: return "signal " + std::to_string(sig);
  }
}

}  // namespace hpcbench
