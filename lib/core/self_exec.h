#pragma once
// This binary running itself: subcommands that run other subcommands as
// child processes (`main`, `run --repeats`), so that a child's failure,
// crash or memory (allocator, caches, thread pools) never reaches the parent
// or the next child, and the local launcher starting its ranks.
#include <string>
#include <vector>

namespace hpcbench {

std::string self_exe();
// Runs this binary with `args`, output inherited; returns its exit status
// (128 + signal when it was killed).
int run_self(const std::vector<std::string>& args);
// The same for the binary `exe`; with `quiet`, its stdout goes to /dev/null
// (its errors on stderr are still seen).
int run_program(const std::string& exe, const std::vector<std::string>& args, bool quiet = false);
// The variable a child of run_self_passing_stop finds its parent's pid in:
// that parent passes it every stop signal and makes a second one SIGKILL,
// so the child does not end on a second signal itself (the terminal's
// Ctrl-C reaches it twice: directly, and through the parent).
inline constexpr const char* kStopParentVariable = "HPCBENCH_STOP_PARENT";
// run_self for a child that must hear what this process hears: the first
// stop signal this process receives (core/stop_signal.h; its handlers must be
// installed) is sent on to the child, a second one becomes SIGKILL. The child
// starts with the stop signals blocked until its own handlers are in place,
// so one sent while it loads is not its death.
int run_self_passing_stop(const std::vector<std::string>& args);
// This process's command line, the program name first (/proc/self/cmdline);
// empty when it cannot be read.
std::vector<std::string> own_command_line();
// The same after the program name.
std::vector<std::string> own_arguments();
// `args` without `flag` and its value (as "--flag value" or "--flag=value").
std::vector<std::string> strip_flag(const std::vector<std::string>& args, const std::string& flag);

}  // namespace hpcbench
