#pragma once
// This rank's place in a launched job (context.h), found at its start.
#include "distributed/launch_env.h"
#include "run/context.h"
#include "run/job.h"

namespace hpcbench::run {

// This rank's place in the job: its communicator (when the job has several
// ranks or the strategy communicates at one), the job's hosts, and the job
// laid out in the log.
RunContext rank_context(const dist::RankLayout& layout, const train::TrainConfig& cfg, const strategies::Choice& choice,
                        const JobOptions& o);

}  // namespace hpcbench::run
