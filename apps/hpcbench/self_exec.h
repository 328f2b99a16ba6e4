#pragma once
// Subcommands that run other subcommands as child processes of this same
// binary (`main`, `run --repeats`): a child's failure, crash or memory
// (allocator, caches, thread pools) never reaches the parent or the next child.
#include <string>
#include <vector>

namespace hpcbench::cli {

std::string self_exe();
// Runs this binary with `args`, output inherited; returns its exit status
// (128 + signal when it was killed).
int run_self(const std::vector<std::string>& args);
// The same for the binary `exe`; with `quiet`, its stdout goes to /dev/null
// (its errors on stderr are still seen).
int run_program(const std::string& exe, const std::vector<std::string>& args, bool quiet = false);
// This process's arguments after the program name (/proc/self/cmdline).
std::vector<std::string> own_arguments();

}  // namespace hpcbench::cli
