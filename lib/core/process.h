#pragma once
// Other programs, and this one again, as child processes: the one place that
// forks and execs. Everything that starts a process (the local launcher's
// ranks, `main` and `run --repeats` running themselves, gnuplot, sbatch,
// squeue, scontrol) says here what the child gets (its arguments,
// environment, folder, where its output goes, its process group, its
// signals) and how it is waited for.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace hpcbench {

// Where a child's stdout or stderr goes.
enum class Sink {
  Inherit,  // this process's
  Null,     // /dev/null
  Pipe,     // a pipe whose read end Child holds
  File,     // Command::file, created or emptied
  Stdout,   // stderr only: wherever stdout goes
};

struct Command {
  std::string program;            // the file executed, a path (find_program looks one up on PATH)
  std::vector<std::string> args;  // after the program's name
  std::string name;               // argv[0]; empty: `program`
  std::vector<std::string> env;   // "NAME=value", set in the child's copy of this environment (replacing)
  std::filesystem::path cwd;      // empty: this process's folder
  Sink out = Sink::Inherit, err = Sink::Inherit;
  std::filesystem::path file;     // for Sink::File
  bool stdin_null = false;        // a prompt must not wait for a keyboard that is not there
  bool own_group = false;         // its own process group, so that ending it ends what it started
  bool dies_with_parent = false;  // SIGKILL when this process ends, however it ends
  // SIGTERM, SIGINT and SIGUSR1 blocked until the child installs its own
  // handlers (hpcbench itself: core/stop_signal.h unblocks them), so that one
  // sent while it loads waits instead of killing it.
  bool stop_signals_blocked = false;
  // SIGTERM and SIGINT at their default action, as a shell would start it.
  bool stop_signals_default = false;
};

// A started child; the pipes' read ends are close-on-exec, -1 where the
// stream was not a pipe.
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
};

// Starts `cmd`. Throws UserError "cannot start <program>: <why>" when it
// cannot: exec's own error (a missing program, one not executable, a folder
// that cannot be entered) is passed back from the child.
Child start(const Command& cmd);

// Blocks until `pid` exits; its wait status (EINTR is retried).
int wait_for(pid_t pid);
// A wait status as a shell reports it: the exit code, or 128 + the signal.
int exit_code(int wait_status);
// "exited with status 2", "was killed by signal 9 (Killed)".
std::string describe_exit(int wait_status);

// Runs `cmd` to its end; its exit_code.
int run(const Command& cmd);

// run for a child that must hear what this process hears: the first stop
// signal this process receives (core/stop_signal.h; its handlers must be
// installed) is sent on to the child, a further one becomes SIGKILL.
int run_passing_stop(const Command& cmd);

struct Captured {
  int status = -1;         // exit_code, or -1 when it could not run or was killed by us
  bool timed_out = false;  // killed after the time limit
  int interrupted = 0;     // the stop signal this process received while it ran (it was killed then)
  std::string text;        // what it wrote, as bytes, at most CaptureLimits::max_bytes of them
  std::string error;       // why it could not run
};

// A program that prints without end is cut there: what it said first is
// what explains it.
inline constexpr size_t kMaxCaptured = 64 * 1024;

struct CaptureLimits {
  double timeout_s = 0;         // > 0: killed after this long
  bool stop_on_signal = true;   // killed when this process receives SIGTERM or SIGINT
  size_t max_bytes = kMaxCaptured;
};

// Runs `cmd` with its stdout (and stderr where it is Sink::Stdout) in
// Captured::text. Killed, with its whole group where cmd.own_group, past
// the time limit or on a stop signal (caught meanwhile as StopSignalScope
// does in a process without the handlers). A child that exited while
// something it started keeps the pipe open is done at its exit.
Captured run_captured(Command cmd, const CaptureLimits& limits);

// `sh -c command` as a shell would run it from a script: its own process
// group, stdin from /dev/null, SIGTERM and SIGINT at their defaults, stdout
// and stderr together.
Command shell_command(const std::string& command);

// The program's path: `name` itself where it holds a '/', else the first
// executable `name` in a folder of PATH (an empty entry is this folder);
// "" when there is none.
std::string find_program(const std::string& name);

}  // namespace hpcbench
