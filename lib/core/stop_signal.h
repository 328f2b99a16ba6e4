#pragma once
// SIGTERM, SIGINT and SIGUSR1 as a request to stop, not as death: SLURM sends
// SIGTERM at a job's time limit and on scancel (and the signal a script asks
// for with --signal ahead of the limit), a user at a terminal sends SIGINT.
// A process that installed the handlers sees the first such signal here and
// finishes what it measured instead of losing it. The handlers only store
// the signal's number (async-signal-safe); the program polls.
#include <string>

namespace hpcbench {

// Installs the handlers for SIGTERM, SIGINT and SIGUSR1. With
// `second_kills`, a second signal after the first one ends the process at
// once (a person pressing Ctrl-C twice); without it the process keeps
// stopping its own way, as a rank must when the launcher forwards the
// signal its terminal also sent.
void install_stop_handlers(bool second_kills);

// The first stop signal this process received, or that another rank of its
// job received and note_stop passed on; 0 while none.
int stop_signal();

// Another rank's stop request, seen through the job's store: from now on
// this process stops as if it had received `sig` itself (evaluation, the
// step loop). Keeps the first signal when one came already.
void note_stop(int sig);

// How many stop signals this process received (a launcher or a parent
// that forwards them makes the second one mean "now").
int stop_signal_count();

// Throws Interrupted ("interrupted by SIGTERM while <during>") once a stop
// signal came; every wait that can last polls it, so that no wait outlives
// a request to stop.
void throw_if_stopped(const std::string& during);

// For commands that do not install the handlers (sweep, report, fetch):
// while it lives SIGTERM and SIGINT are caught as by install_stop_handlers
// (a second one ends the process at once), so that a wait on another program
// can stop it, say why and end. Does nothing where the handlers are installed.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;

 private:
  bool installed_ = false;
  struct Saved;
  Saved* saved_ = nullptr;
};

// "SIGTERM", "SIGINT", "SIGUSR1" (else "signal N").
std::string signal_name(int sig);

}  // namespace hpcbench
