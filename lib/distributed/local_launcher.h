#pragma once
// `hpcbench <command> --nproc-per-node N`: starts N copies of this very
// binary as ranks 0..N-1 of a one-node job (torchrun's variables, a free
// port on 127.0.0.1), prefixes their output with "[rank k] ", and stops the
// whole job as soon as one rank fails, so that a crash never leaves the
// others waiting in a collective.
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace hpcbench::dist {

struct LaunchOptions {
  int nproc = 1;
  // Between SIGTERM and SIGKILL for the surviving ranks once one failed.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  std::string flag = "--nproc-per-node";
  // > 0: OMP_NUM_THREADS for every rank (LibTorch's intra-op default), so
  // that N ranks on one machine share its cores instead of each taking all.
  int threads_per_rank = 0;
  // Flags of this process's command line the ranks do not get (besides
  // `flag`), and flags appended to theirs: a --repeats parent that launches
  // each repeat's ranks itself drops --repeats and names the repeat.
  std::vector<std::string> drop_flags{};
  std::vector<std::string> extra_args{};
};

// The intra-op threads each of `nproc` local ranks gets when the user chose
// none: an equal share of `available` (at least 1), or 0 (leave the ranks
// alone) when OMP_NUM_THREADS is set in `env`, as torchrun does.
int threads_per_rank(const std::map<std::string, std::string>& env, int nproc, int available);

// Runs the job and returns the exit status for the launcher: 0 when every
// rank exited 0, otherwise the first failed rank's exit status (128 + signal
// when it was killed), after a message naming that rank on stderr.
int launch_local(const LaunchOptions& options);

// True inside a rank started by launch_local (or torchrun): launching again
// would nest jobs.
bool launched_as_rank();

}  // namespace hpcbench::dist
