#pragma once
// What a job checks before anything starts: its flags, the files it reads
// and writes, and this node's cores and memory.
#include <string>

#include "run/job.h"

namespace hpcbench::run {

// What the job's flags decide, checked before anything starts.
void check_options(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o);

// Threads each rank computes with: --threads, else the launcher's share,
// else LibTorch's default here (OMP_NUM_THREADS when set).
int threads_of(const train::TrainConfig& cfg, int launcher_share);

// Whatever would fail only at the end of the run, before anything starts:
// the files it reads and writes, the evaluation set.
void check_files(const train::TrainConfig& cfg, const JobOptions& o, bool writes_outputs);

// The files, and this node's resources: `ranks` run here, with `threads` each.
void check_before_start(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                        int ranks, int world, int threads, const std::string& ranks_flag, bool writes_outputs);

// `run --dry-run` once every check passed: says so; returns the exit status (0).
int dry_run_done();

}  // namespace hpcbench::run
