#pragma once
// The sweep that proves a plan: the top k layouts at the plan's shape beside
// the one-device reference, written by the sweep's own machinery
// (lib/sweep: job scripts, sweep.json, sbatch), with plan.json
// (results/plan_file.h) beside sweep.json so that `report` on the sweep
// folder puts each run beside its prediction.
#include <vector>

#include "plan/search.h"
#include "results/plan_file.h"
#include "sweep/manifest.h"

namespace hpcbench::plan {

// `opts` comes with the folder, the binary, the sbatch options and the run
// flags; this sets the strategies and the shape. The reference first (the
// global batch on one device), then the top `k` in rank order, each job
// with its own --batch-size and --grad-accum, named after its label's job
// with "-accum<N>" where it accumulates and "-recompute" (and
// --activation-checkpointing) where it recomputes. Throws UserError naming --verify
// when k is below 1.
std::vector<sweep::SweepJob> verify_jobs(const Result& result, const Request& request, int k,
                                         sweep::SweepOptions& opts);

// What plan.json records for `jobs` (as verify_jobs made them).
results::PlanFile plan_record(const Result& result, const Request& request, const std::vector<sweep::SweepJob>& jobs,
                              const std::string& system_file);

// Writes the sweep and plan.json (nothing when the sweep cannot be written).
sweep::Sweep write_verify_sweep(const sweep::SweepOptions& opts, std::vector<sweep::SweepJob> jobs,
                                const results::PlanFile& plan);

}  // namespace hpcbench::plan
