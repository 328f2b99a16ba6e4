#include "core/stop_signal.h"

#include <signal.h>

#include <atomic>
#include <string>

namespace hpcbench {

namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_second_kills{false};

void on_stop_signal(int sig) {
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
