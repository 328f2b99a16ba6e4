#pragma once
// What a job leaves: rank 0's results folder and summary, its name, and the
// exit status of a run a signal stopped.
#include <string>

#include "distributed/step_stop.h"
#include "specs/spec.h"
#include "train/config.h"
#include "run/trainer.h"

namespace hpcbench::run {

// The results folder's name when --run-name gives none:
// <strategy>-<world>x-<local time>.
std::string default_run_name(const strategies::Choice& choice, int world);

// How a run that stopped on a signal ends: 128 + the signal, as a shell
// reports a process the signal ended (the results, if any, are written).
int interrupted_exit(int sig);

// Rank 0's results folder, and the summary on the terminal. Returns the
// process's exit status.
int write_results(const train::TrainConfig& cfg, const std::string& name, TrainOutput out, const dist::StepStop& stop,
                  const RunContext& ctx, const TrainHooks& hooks);

}  // namespace hpcbench::run
