#pragma once
// sweep.json: what a sweep queued and where each job writes, so that the
// report can list the finished runs and name the pending or failed ones.
//
// {
//   "schema": "hpcbench-sweep/1",
//   "created": "2025-01-31T12:00:00Z",
//   "sweep_dir": "/abs/path/of/the/sweep",       (paths below are relative to it)
//   "hpcbench": "/abs/path/of/the/binary",
//   "mode": "gpu" | "cpu",
//   "sbatch_options": {"partition": "", "account": "", "time": "", "constraint": "", "qos": "",
//                      "gres_type": "", "cpus_per_task": 0},
//   "run_args": ["--max-steps", "100"],
//   "jobs": [{"name": "<label>-2x2", "strategy": "<label>", "nodes": 2, "gpus_per_node": 2,
//             "world_size": 4, "script": "jobs/<label>-2x2.sbatch", "run_dir": "runs/<label>-2x2",
//             "log": "logs/<label>-2x2-%j.out", "extra_args": [] (this job's own run flags),
//             "job_id": "1234" | null,
//             "state": "written" | "submitted" | "submit_failed", "submit_error": "",
//             "previous_job_ids": ["1200"]}]   (jobs a resume replaced: they ended without results)
// }
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/plan.h"

namespace hpcbench::sweep {

inline constexpr const char* kManifestSchema = "hpcbench-sweep/1";

struct Sweep {
  std::filesystem::path dir;  // absolute
  SweepOptions options;
  std::string created;  // UTC, ISO 8601
  std::vector<SweepJob> jobs;
};

nlohmann::ordered_json to_json(const Sweep& sweep);
// Reads sweep.json of `dir`; throws UserError naming the file when it is
// missing, not JSON, or of another schema, when a job's script, run_dir or
// log is not under the sweep's jobs/, runs/ or logs/ (absolute, "..": a
// manifest must not point resume at a file elsewhere), or when a job id is
// not one (job_id_problem) or is given to two jobs.
Sweep read_manifest(const std::filesystem::path& dir);
// Why `id` is not a job id SLURM gives ("" when it is one): digits only, no
// leading zero, 1 to 4294967295.
std::string job_id_problem(const std::string& id);

// The job's script, checked to be a file of the sweep's own jobs/ folder
// also once links are followed; throws UserError naming the path otherwise.
std::filesystem::path script_inside(const Sweep& sweep, const SweepJob& job);

// Rewrites <dir>/sweep.json atomically (readers never see half a manifest).
void write_manifest(const Sweep& sweep);

// Writes jobs/*.sbatch and sweep.json into a new (or empty) sweep folder and
// creates runs/ and logs/. Throws UserError when the folder already holds a
// sweep, so that one sweep's job ids are never overwritten by another's.
Sweep write_sweep(const SweepOptions& opts);
// The same for jobs chosen elsewhere (`plan`'s: plan_jobs' jobs of several
// option sets, some with flags of their own).
Sweep write_sweep(const SweepOptions& opts, std::vector<SweepJob> jobs);

}  // namespace hpcbench::sweep
