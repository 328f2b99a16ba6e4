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

// The same for repeated reads of the same roots, cheaper: finding the trees'
// members takes a pass over every process of the machine (about 25 us each),
// so it is done every `rescan_every` reads, and the reads between read the
// members found last (a child started since is seen at the next pass).
class ProcTrees {
 public:
  ProcTrees(std::vector<pid_t> roots, int rescan_every = 10);
  std::vector<std::optional<ProcTreeUsage>> read();

 private:
  std::vector<pid_t> roots_;
  int rescan_every_;
  int reads_ = 0;
  std::vector<std::vector<pid_t>> members_;  // per root, the root first
};

}  // namespace hpcbench::monitor
