#pragma once
// A training job from its configuration to its results folder, what `hpcbench
// run` does once its flags are read: checks everything that could fail at
// the end, repeats the run as separate processes or starts local ranks when
// asked, finds this rank's place in the job and its communicator, trains
// (trainer.h) and, on rank 0 once every rank got there, writes the run
// folder (results/run_folder.h).
#include <cstdint>
#include <string>

#include "specs/spec.h"
#include "train/config.h"

namespace hpcbench::run {

// What a job takes besides its settings table and strategy: how it is laid
// out and launched, and files for tests and comparisons.
struct JobOptions {
  int nproc_per_node = 0;  // > 0: start this many local ranks
  int nodes = 0;           // expected (checked against the job); 0: not checked
  int gpus_per_node = 0;
  double collective_timeout_s = 300;
  double connect_timeout_s = 120;
  // A strategy at world size 1 issues its collectives anyway, so that one
  // GPU runs NCCL (and the timing of collectives) for real.
  bool keep_collectives = false;
  std::string backend = "auto";  // auto, nccl, gloo
  bool allow_shared_gpu = false;
  std::string save_checkpoint, save_initial_checkpoint, dump_data;
  // N > 1: N child runs of the same command, one after the other; each child
  // is told its group and index and records them.
  int64_t repeats = 1;
  std::string repeat_group;
  int64_t repeat_index = 0;
  // Every check a run makes before its first step, then exit.
  bool dry_run = false;
};

// Returns the process's exit status.
int run_job(const train::TrainConfig& cfg, const strategies::Choice& choice, const JobOptions& options);

}  // namespace hpcbench::run
