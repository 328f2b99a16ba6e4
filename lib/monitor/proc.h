#pragma once
// A process tree's CPU time and resident memory from /proc: a rank and every
// process below it (workers it forks), all their threads included.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace hpcbench::monitor {

struct ProcTreeUsage {
  double cpu_s = 0;        // user + system time of the live processes of the tree
  int64_t rss_bytes = 0;   // their resident memory
};

// One entry per root, nothing for a root that no longer exists; one pass
// over /proc serves every root (a node's ranks).
std::vector<std::optional<ProcTreeUsage>> read_proc_trees(const std::vector<pid_t>& roots);

}  // namespace hpcbench::monitor
