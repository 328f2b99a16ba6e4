#include "run/fault_hook.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"

namespace hpcbench::run {

std::function<void(int64_t)> fault_hook(int rank) {
  const char* spec = std::getenv("HPCBENCH_TEST_FAULT");
  if (!spec || !*spec) return {};
  int who = -1;
  long after = 0;
  char mode[16] = {0};
  if (std::sscanf(spec, "%d:%ld:%15s", &who, &after, mode) != 3)
    fail("HPCBENCH_TEST_FAULT='{}': expected <rank>:<after>:<kill|abort|exit|hang|stop|term>", spec);
  if (who != rank) return {};
  return [who, after, m = std::string(mode), fired = false](int64_t step) mutable {
    if (step < after || fired) return;
    fired = true;
    std::fflush(stdout);
    std::fprintf(stderr, "HPCBENCH_TEST_FAULT: rank %d goes '%s' after %ld steps\n", who, m.c_str(), after);
    std::fflush(stderr);
    if (m == "term") {
      ::kill(::getpid(), SIGTERM);
      return;
    }
    if (m == "stop") ::raise(SIGSTOP);
    if (m == "kill") ::kill(::getpid(), SIGKILL);
    if (m == "abort") std::abort();
    if (m == "exit") std::_Exit(3);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  };
}

}  // namespace hpcbench::run
