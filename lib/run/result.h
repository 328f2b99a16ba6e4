#pragma once
// The run record (results/run_record.h), filled here and nowhere else: from
// the facts build() computed once, where the job ran, the job's combined
// steps, the evaluation and the sampler's summary.
#include "monitor/job_sampling.h"
#include "results/run_record.h"
#include "run/build.h"
#include "run/combine.h"
#include "run/evaluate.h"

namespace hpcbench::run {

// `evaluation` and `sampled`: null when the run had none. A job stopped
// before its first step (no steps) gets its identity and status
// "interrupted" alone: it measured nothing.
results::RunResult run_result(const Run& run, const RunContext& ctx, const JobSteps& job,
                              const Evaluation* evaluation, const monitor::Summary* sampled);

}  // namespace hpcbench::run
