#pragma once
// Small helpers for the SLURM tests: run a shell command, read the #SBATCH
// options of a script, wait for a job.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"

namespace hpcbench::test {

struct Shell {
  int status = -1;
  std::string out;  // stdout and stderr
};

inline Shell sh(const std::string& command) {
  auto r = run_command(command);
  return {r.exit_code, std::move(r.output)};
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// "--name=value" of every "#SBATCH --name=value  # comment" line, as sbatch
// reads them (it stops at the first command, so only the header counts).
inline std::multimap<std::string, std::string> sbatch_options(const std::string& script) {
  std::multimap<std::string, std::string> out;
  for (const auto& l : lines_of(script)) {
    if (l.rfind("#!", 0) == 0 || l.empty()) continue;
    if (l[0] != '#') break;
    if (l.rfind("#SBATCH ", 0) != 0) continue;
    std::istringstream words(l.substr(8));
    std::string opt;
    words >> opt;
    auto eq = opt.find('=');
    out.emplace(opt.substr(0, eq), eq == std::string::npos ? "" : opt.substr(eq + 1));
  }
  return out;
}

}  // namespace hpcbench::test
