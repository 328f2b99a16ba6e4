#include "sweep/manifest.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "core/bounded_read.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/time.h"
#include "core/hostinfo.h"
#include "results/json_file.h"
#include "sweep/job_script.h"

namespace hpcbench::sweep {

namespace fs = std::filesystem;

namespace {

nlohmann::ordered_json job_json(const SweepJob& j) {
  return {{"name", j.name},
          {"strategy", j.strategy},
          {"nodes", j.nodes},
          {"gpus_per_node", j.gpus_per_node},
          {"world_size", j.world_size()},
          {"script", j.script.string()},
          {"run_dir", j.run_dir.string()},
          {"log", j.log},
          {"extra_args", j.extra_args},
          {"repeat_group", j.repeat_group},
          {"repeat_index", j.repeat_index},
          {"job_id", j.job_id ? nlohmann::ordered_json(*j.job_id) : nlohmann::ordered_json(nullptr)},
          {"state", j.state},
          {"submit_error", j.submit_error},
          {"previous_job_ids", j.previous_job_ids}};
}

// `rel`, a path sweep.json gives for a job, is under `folder`/ of the sweep
// (jobs/, runs/, logs/) as the sweep wrote it: relative, no "..". A manifest
// edited by hand or by someone else must not make resume run, or the report
// read, a file elsewhere.
void check_inside(const fs::path& file, const std::string& job, const char* field, const std::string& rel,
                  const char* folder) {
  fs::path p(rel);
  bool ok = !rel.empty() && p.is_relative() && rel.find('\0') == std::string::npos;
  for (const auto& part : p)
    if (part == ".." || part == ".") ok = false;
  if (ok) ok = *p.begin() == folder && std::distance(p.begin(), p.end()) >= 2;
  if (!ok)
    fail("{}: job '{}': {} '{}' is outside the sweep's {}/ folder; refusing it (a sweep's {} paths are "
         "{}/<job>..., relative to the sweep folder; write a new sweep rather than editing sweep.json)",
         file.string(), job, field, rel, folder, field, folder);
}

}  // namespace

std::string job_id_problem(const std::string& id) {
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) return "not a number";
  if (id.size() > 10 || std::stoull(id) > 4294967295ULL)
    return "more than a SLURM job id holds (32 bits, at most 4294967295)";
  if (id == "0" || id[0] == '0') return id == "0" ? "SLURM never gives job id 0" : "a leading zero";
  return "";
}

fs::path script_inside(const Sweep& sweep, const SweepJob& job) {
  check_inside(sweep.dir / "sweep.json", job.name, "script", job.script.string(), "jobs");
  // A link in jobs/ to a file elsewhere is as foreign as a path that names it.
  std::error_code ec;
  auto jobs = fs::weakly_canonical(sweep.dir / "jobs", ec);
  auto real = fs::weakly_canonical(sweep.dir / job.script, ec);
  auto rel = real.lexically_relative(jobs);
  if (ec || rel.empty() || *rel.begin() == "..")
    fail("{}: job '{}': script {} resolves to {}, outside the sweep's jobs/ folder {}; refusing to submit it",
         (sweep.dir / "sweep.json").string(), job.name, job.script.string(), real.string(), jobs.string());
  return sweep.dir / job.script;
}

nlohmann::ordered_json to_json(const Sweep& sweep) {
  const auto& o = sweep.options;
  auto jobs = nlohmann::ordered_json::array();
  for (const auto& j : sweep.jobs) jobs.push_back(job_json(j));
  return {{"schema", kManifestSchema},
          {"created", sweep.created},
          {"sweep_dir", sweep.dir.string()},
          {"hpcbench", o.hpcbench.string()},
          {"mode", o.cpu ? "cpu" : "gpu"},
          {"sbatch_options",
           {{"partition", o.partition},
            {"account", o.account},
            {"time", o.time},
            {"constraint", o.constraint},
            {"qos", o.qos},
            {"gres_type", o.gres_type},
            {"cpus_per_task", o.cpus_per_task}}},
          {"run_args", o.run_args},
          {"jobs", jobs}};
}

Sweep read_manifest(const fs::path& dir) {
  fs::path file = dir / "sweep.json";
  const auto j = results::read_json_file(file, file_limit::kSmall, kManifestSchema, "sweep manifest");
  return results::read_fields(file, "sweep manifest", [&] {
    Sweep s;
    s.dir = j.at("sweep_dir").get<std::string>();
    s.created = j.at("created").get<std::string>();
    auto& o = s.options;
    o.hpcbench = j.at("hpcbench").get<std::string>();
    o.cpu = j.at("mode").get<std::string>() == "cpu";
    const auto& so = j.at("sbatch_options");
    o.partition = so.at("partition");
    o.account = so.at("account");
    o.time = so.at("time");
    o.constraint = so.at("constraint");
    o.qos = so.at("qos");
    o.gres_type = so.at("gres_type");
    o.cpus_per_task = so.at("cpus_per_task");
    o.run_args = j.at("run_args").get<std::vector<std::string>>();
    for (const auto& jj : j.at("jobs")) {
      SweepJob job;
      job.name = jj.at("name");
      job.strategy = jj.at("strategy");
      job.nodes = jj.at("nodes");
      job.gpus_per_node = jj.at("gpus_per_node");
      job.script = jj.at("script").get<std::string>();
      job.run_dir = jj.at("run_dir").get<std::string>();
      job.log = jj.at("log");
      job.repeat_group = jj.value("repeat_group", "");
      job.extra_args = jj.value("extra_args", std::vector<std::string>{});
      job.repeat_index = jj.value("repeat_index", 0);
      if (!jj.at("job_id").is_null()) job.job_id = jj.at("job_id").get<std::string>();
      job.state = jj.at("state");
      job.submit_error = jj.value("submit_error", "");
      job.previous_job_ids = jj.value("previous_job_ids", std::vector<std::string>{});
      check_inside(file, job.name, "script", job.script.string(), "jobs");
      check_inside(file, job.name, "run_dir", job.run_dir.string(), "runs");
      check_inside(file, job.name, "log", job.log, "logs");
      std::vector<std::string> ids = job.previous_job_ids;
      if (job.job_id) ids.push_back(*job.job_id);
      for (const auto& id : ids) {
        if (auto why = job_id_problem(id); !why.empty())
          fail("{}: job '{}': job id '{}' is not a SLURM job id ({})", file.string(), job.name, id, why);
        for (const auto& other : s.jobs)
          if (other.job_id == id)
            fail("{}: job id {} is given to two jobs, {} and {} (SLURM never gives one id twice)", file.string(),
                 id, other.name, job.name);
      }
      s.jobs.push_back(std::move(job));
    }
    return s;
  });
}

void write_manifest(const Sweep& sweep) {
  // Every text that came from another program is made printable where it
  // is stored; replacing what is not UTF-8 here too keeps the manifest
  // writable whatever a future field holds.
  write_file_atomic(sweep.dir / "sweep.json",
                    to_json(sweep).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

Sweep write_sweep(const SweepOptions& opts) { return write_sweep(opts, plan_jobs(opts)); }

Sweep write_sweep(const SweepOptions& opts, std::vector<SweepJob> jobs) {
  Sweep sweep;
  sweep.jobs = std::move(jobs);
  sweep.options = opts;
  sweep.created = utc_now_iso();
  std::error_code ec;
  sweep.dir = fs::absolute(opts.out_dir, ec).lexically_normal();
  if (ec) fail("--out {}: {}", opts.out_dir.string(), ec.message());
  // #SBATCH lines end at the first blank: a folder with one cannot be the log's.
  if (sweep.dir.string().find_first_of(" \t\n") != std::string::npos)
    fail("--out '{}': the sweep folder's path must not contain spaces (#SBATCH --output cannot hold them)",
         sweep.dir.string());
  const auto json_st = fs::symlink_status(sweep.dir / "sweep.json", ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    fail("--out {}: cannot look at it: {}", opts.out_dir.string(), ec.message());
  if (fs::exists(json_st))
    fail("--out {}: already holds a sweep (sweep.json); `hpcbench sweep --out {} --resume` submits its jobs that "
         "are missing or failed, or choose another folder", sweep.dir.string(), opts.out_dir.string());
  for (const char* sub : {"jobs", "runs", "logs"}) {
    fs::create_directories(sweep.dir / sub, ec);
    if (ec) fail("--out {}: cannot create {}/: {}", sweep.dir.string(), sub, ec.message());
  }
  for (const auto& job : sweep.jobs) {
    auto path = sweep.dir / job.script;
    write_file_atomic(path, render_job_script(opts, job, sweep.dir));
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  }
  write_manifest(sweep);
  return sweep;
}

}  // namespace hpcbench::sweep
