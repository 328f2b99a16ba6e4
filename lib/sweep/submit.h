#pragma once
// Queues a written sweep with sbatch, one job at a time, recording each job
// id in sweep.json as soon as sbatch returns it: if submission stops half
// way (sbatch refuses a job, the login node drops), the manifest still names
// every job that was queued.
#include <string>

#include "sweep/manifest.h"

namespace hpcbench::sweep {

struct SubmitSummary {
  int submitted = 0;
  int failed = 0;
};

// Submits every job not yet submitted. `sbatch` is the command to run (the
// HPCBENCH_SBATCH variable overrides the default "sbatch", so that tests can
// stand in a fake). A job sbatch refuses is marked submit_failed with
// sbatch's message; the others are still submitted.
SubmitSummary submit_sweep(Sweep& sweep, const std::string& sbatch = "");

// The job id in `sbatch --parsable` output ("1234" or "1234;cluster"), or ""
// when there is none.
std::string parse_job_id(const std::string& sbatch_output);

}  // namespace hpcbench::sweep
