#pragma once
// The run's output once every rank's steps are combined (combine.h): the
// run record (result.h), run.json's sections and the sampler's rows.
#include <optional>

#include "monitor/job_sampling.h"
#include "run/build.h"
#include "run/combine.h"
#include "run/evaluate.h"
#include "run/trainer.h"

namespace hpcbench::run {

// The run's output (rank 0's is the job's).
TrainOutput summarise(const Run& run, const RunContext& ctx, JobSteps job, const std::optional<Evaluation>& evaluation,
                      const monitor::JobSampling::Job& sampled);

}  // namespace hpcbench::run
