#pragma once
// What a sweep's jobs that left no results are doing, as rows the report can
// show: a job still queued or running is "pending"/"running", one that
// ended without a run folder (or was never queued) is "failed".
#include <optional>
#include <string>
#include <vector>

#include "results/run_record.h"
#include "sweep/manifest.h"

namespace hpcbench::sweep {

// Where one job of a sweep stands: "done" (its run folder has a
// summary.csv), "interrupted" (one whose status is interrupted: a time
// limit stopped it, and what it measured is there), "written" (never submitted), "submit_failed", "pending" or
// "running" (squeue has it), "failed" (submitted, no longer queued, no
// results), or "unknown" (submitted, squeue cannot be asked and there is no
// log yet: it may still be waiting). squeue is $HPCBENCH_SQUEUE when set.
// Each squeue is stopped after HPCBENCH_SQUEUE_TIMEOUT seconds
// (kDefaultSqueueTimeoutS); SIGTERM/SIGINT end the wait with Interrupted.
std::string job_progress(const Sweep& sweep, const SweepJob& job);

inline constexpr double kDefaultSqueueTimeoutS = 30;

// squeue asked job by job for one look at a sweep: after one call timed out
// the rest are not made (they would hang as long) and their jobs are unknown.
struct SqueueAsker {
  bool stuck = false;
  std::optional<std::string> state(const std::string& job_id);
};
std::string job_progress(const Sweep& sweep, const SweepJob& job, SqueueAsker& squeue);

// One row per job of `sweep` whose run folder has no summary.csv. The state
// of a submitted job is asked of squeue; without squeue, a job whose log
// exists is taken as ended (failed), one without as pending.
std::vector<results::RunResult> unfinished_jobs(const Sweep& sweep);

struct ResumeEntry {
  std::string job, progress;  // the job's name and job_progress before the resume
};
struct ResumePlan {
  std::vector<ResumeEntry> resubmit;  // cleared for submit_sweep: written, submit_failed or failed
  std::vector<ResumeEntry> kept;      // done, interrupted, pending, running or unknown: left as they are
};

// Readies `sweep` (read from its sweep.json) for submit_sweep to send only
// what is missing or failed: jobs never submitted, refused by sbatch, or
// ended without results (their old job id moves to previous_job_ids). A
// script that is gone from jobs/ is written again. Throws UserError when the
// folder is not where the manifest says (its scripts name that path).
ResumePlan prepare_resume(Sweep& sweep, const std::filesystem::path& dir);

}  // namespace hpcbench::sweep
