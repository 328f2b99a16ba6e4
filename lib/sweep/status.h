#pragma once
// What a sweep's jobs that left no results are doing, as rows the report can
// show: a job still queued or running is "pending"/"running", one that
// ended without a run folder (or was never queued) is "failed".
#include <vector>

#include "report/run_result.h"
#include "sweep/manifest.h"

namespace hpcbench::sweep {

// One row per job of `sweep` whose run folder has no summary.csv. The state
// of a submitted job is asked of squeue; without squeue, a job whose log
// exists is taken as ended (failed), one without as pending.
std::vector<report::RunResult> unfinished_jobs(const Sweep& sweep);

}  // namespace hpcbench::sweep
