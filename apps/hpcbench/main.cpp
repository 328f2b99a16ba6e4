#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "program.h"
#include "results/run_folder.h"

int main(int argc, char** argv) {
  const int rc = hpcbench::cli::run_program(argc, argv);
#ifndef HPCBENCH_SANITIZED
  // LibTorch's static destructors deregister each of its operators again:
  // about 0.3 s of every process's exit (perf: `hpcbench --version` took
  // 913 ms of CPU, 598 ms so), paid by each rank and each repeat of the main
  // job. What this program writes is closed before run_program returns;
  // what its own static objects hold (the results' claims) is given back
  // here, and the streams are flushed. The sanitizer builds exit normally,
  // so that the leak check still runs.
  hpcbench::results::release_claims();
  std::cout.flush();
  std::cerr.flush();
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(rc);
#else
  return rc;
#endif
}
