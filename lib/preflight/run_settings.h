#pragma once
// One validation of a run's settings, the one that `run`, `run --dry-run`,
// `sweep` (through `run --dry-run` for every job) and `predict` (for every
// row) all call, so that none of them passes what another refuses: the
// training settings, the strategy's options, the strategy on the job's
// devices and model, the micro-batch its options cut, and the batch against
// the data each rank holds.
#include <cstdint>
#include <string>

#include "specs/model_shape.h"
#include "specs/schedule.h"
#include "specs/spec.h"
#include "train/config.h"

namespace hpcbench::preflight {

// The strategy on `devices` (nodes x devices per node) with `batch_size`
// rows per device a micro-step (0: not known) and a model of `model`'s shape
// (named `model_name`). Throws UserError naming the flags.
void check_strategy_fits(const strategies::Choice& choice, const strategies::Shape& devices, int64_t batch_size,
                         const strategies::ModelShape& model, const std::string& model_name);

// Every setting of a run of `choice` on `devices`: train::validate, the
// options, check_strategy_fits with the run's model, and, where the number of
// training samples is known before the features are built (synthetic data),
// that the batch fits each data-parallel rank's share of them. Throws
// UserError naming the flags.
void check_run_settings(const train::TrainConfig& cfg, const strategies::Choice& choice,
                        const strategies::Shape& devices);

// The devices a job of `processes` computes on: the processes, or for a
// strategy that drives several devices from one process, the devices its
// option names (at least one; 0, "every device", is not known before the run).
strategies::Shape job_devices(const strategies::Choice& choice, const strategies::Shape& processes);

}  // namespace hpcbench::preflight
