#pragma once
// Runs copies of the current test executable as the ranks of a local Gloo
// job: each gets torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, ...,
// MASTER_ADDR/PORT on a free loopback port) and runs one hidden test case,
// which reads its parameters from an environment variable.
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "test_env.h"

namespace hpcbench::test {

inline std::string self_executable() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// `world` ranks running the case tagged `tag` (e.g. "[tp_worker]") with
// `var`='`value`' in their environment; their logs go to `dir`/<rank>.log and
// the last lines of each into the result's output. Exit code 0 when every
// rank succeeded.
inline CommandResult run_ranks(int world, const std::string& tag, const std::string& var, const std::string& value,
                               const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ostringstream cmd;
  const int port = free_loopback_port();
  cmd << "pids=''; ";
  for (int r = 0; r < world; ++r)
    cmd << "RANK=" << r << " WORLD_SIZE=" << world << " LOCAL_RANK=" << r << " LOCAL_WORLD_SIZE=" << world
        << " MASTER_ADDR=127.0.0.1 MASTER_PORT=" << port << " " << var << "='" << value << "' "
        << self_executable() << " '" << tag << "' > " << (dir / std::to_string(r)).string()
        << ".log 2>&1 & pids=\"$pids $!\"; ";
  cmd << "rc=0; for p in $pids; do wait $p || rc=1; done; for f in " << dir.string()
      << "/*.log; do echo \"== $f\"; tail -n 30 $f; done; exit $rc";
  return run_command(cmd.str());
}

}  // namespace hpcbench::test
