// What the /proc sampler costs per sample: the full pass over every process
// of the machine that finds a tree's members, against monitor::ProcTrees,
// which makes that pass every 10th read and reads the members found between.
// Prints both and their ratio; run it on the machine whose cost you want.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "monitor/proc.h"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  std::vector<pid_t> roots{::getpid(), ::getppid()};
  auto per_read_us = [n](auto&& read) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) read();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  double full = per_read_us([&] { hpcbench::monitor::read_proc_trees(roots); });
  hpcbench::monitor::ProcTrees trees(roots);
  double cached = per_read_us([&] { trees.read(); });
  std::printf("per sample of 2 process trees, %d reads: full /proc pass %.0f us, ProcTrees %.0f us, ratio %.1fx; "
              "at --sample-ms 100 the sampler takes %.2f%% of a core\n",
              n, full, cached, full / cached, cached / 1000.0);
}
