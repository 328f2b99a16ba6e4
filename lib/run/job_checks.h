#pragma once
// What a job checks before anything starts: its flags, the files it reads
// and writes, and this node's cores and memory.
#include <cstdint>
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

// The space the run's results folder takes: what rank 0 sets aside before
// the first step (results::reserve_results_space) and what `--dry-run` (and
// so `sweep` before it submits) allocates and frees again to check it. The
// checkpoints' space is check_files' (preflight::checkpoint_bytes).
int64_t results_bytes(const train::TrainConfig& cfg);

// The files, and this node's resources: `ranks` run here, with `threads` each.
void check_before_start(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& o,
                        int ranks, int world, int threads, const std::string& ranks_flag, bool writes_outputs);

// `run --dry-run` once every check passed: says so; returns the exit status (0).
int dry_run_done();

}  // namespace hpcbench::run
