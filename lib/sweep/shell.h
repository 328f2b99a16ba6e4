#pragma once
// Another program's answer (sbatch, squeue): run with a time limit, ended by
// SIGTERM/SIGINT to hpcbench, and its output kept as bytes, which need not
// be UTF-8 (a site's locale, a broken wrapper).
#include <string>

namespace hpcbench::sweep {

struct ShellOutput {
  int status = -1;         // exit status, 128 + signal, or -1 when it could not run
  bool timed_out = false;  // killed after the time limit
  int interrupted = 0;     // the stop signal hpcbench received while it ran (it was killed then)
  std::string text;        // stdout and stderr together, as bytes, at most kMaxShellOutput of them
  std::string error;       // why it could not run
};

// A program that prints without end is cut there: what it said first is
// what explains it.
inline constexpr size_t kMaxShellOutput = 64 * 1024;

// `sh -c command` with its output captured; killed (with whatever it
// started: a site wrapper's own children) when it runs past `timeout_s` or
// when hpcbench receives SIGTERM or SIGINT (core/stop_signal.h).
ShellOutput run_shell(const std::string& command, double timeout_s);

}  // namespace hpcbench::sweep
