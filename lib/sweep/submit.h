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
  // sbatch did not answer in time: submission stopped there (the next job
  // would most likely hang too), and the jobs after it are still "written".
  bool timed_out = false;
  // The stop signal that ended submission (SIGTERM, SIGINT); submit_sweep
  // then throws Interrupted once sweep.json says where it stopped.
  int interrupted = 0;
};

// Seconds one sbatch call may take: slurmctld answers in well under a
// second, and sbatch retries a busy controller itself for about a minute.
inline constexpr double kDefaultSbatchTimeoutS = 120;

// Submits every job not yet submitted. `sbatch` is the command to run (the
// HPCBENCH_SBATCH variable overrides the default "sbatch", so that tests can
// stand in a fake). A job sbatch refuses is marked submit_failed with
// sbatch's message; the others are still submitted. An sbatch that has not
// exited after `timeout_s` is killed (its whole process group) and its job
// marked submit_failed with that reason. sbatch's output is stored
// printable (core/printable.h); a job id that is not one SLURM gives (0,
// more than 32 bits, one another job of the sweep has) is refused with its
// reason. Only scripts inside the sweep's jobs/ folder are submitted.
SubmitSummary submit_sweep(Sweep& sweep, const std::string& sbatch = "",
                           double timeout_s = kDefaultSbatchTimeoutS);

// The job id in sbatch's output: `--parsable` ("1234" or "1234;cluster") or
// the human form ("Submitted batch job 1234", which some sites' wrappers
// print whatever the flags), or "" when there is none.
std::string parse_job_id(const std::string& sbatch_output);

}  // namespace hpcbench::sweep
