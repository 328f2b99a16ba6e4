#pragma once
// The flags of every command that starts a job (run, bench-comm): how its
// ranks are started here and the layout the job is checked against.
#include <CLI/CLI.hpp>

namespace hpcbench::cli {

struct LaunchFlags {
  int nproc_per_node = 0;  // > 0: start this many local ranks (the built-in launcher)
  int nodes = 0;           // expected; 0: not checked
  int gpus_per_node = 0;   // expected; 0: not checked
  double connect_timeout_s = 120;
  // Throws UserError naming the flag for values that cannot be.
  void check() const;
};

void add_launch_flags(CLI::App* command, LaunchFlags& flags);

}  // namespace hpcbench::cli
