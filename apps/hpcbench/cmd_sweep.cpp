#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "commands.h"
#include "sweep_checks.h"
#include "core/error.h"
#include "core/self_exec.h"
#include "core/time.h"
#include "specs/registry.h"
#include "sweep/job_script.h"
#include "sweep/manifest.h"
#include "sweep/plan.h"
#include "sweep/status.h"
#include "sweep/submit.h"

namespace hpcbench::cli {

namespace {

struct SweepArgs {
  std::string strategies;  // labels; empty: every strategy that runs one process per device
  std::string nodes = "1";
  std::string gpus = "1";
  std::string out;
  std::string hpcbench;
  bool submit = false;
  bool resume = false;
  double sbatch_timeout_s = sweep::kDefaultSbatchTimeoutS;
  sweep::SweepOptions opts;
};

void print_jobs(const sweep::Sweep& sweep) {
  fmt::print("{:<16} {:>5} {:>6} {:>5}  {:<10} {}\n", "job", "nodes", "per-nd", "ranks", "job id", "script");
  for (const auto& j : sweep.jobs)
    fmt::print("{:<16} {:>5} {:>6} {:>5}  {:<10} {}\n", j.name, j.nodes, j.gpus_per_node, j.world_size(),
               j.job_id.value_or(j.state == "submit_failed" ? "FAILED" : "-"), (sweep.dir / j.script).string());
}

// The jobs come from sweep.json, so a flag that would change them is refused
// rather than silently ignored.
int resume_sweep(const SweepArgs& a, const CLI::App& sub) {
  if (a.out.empty()) fail("--resume: name the sweep folder with --out");
  for (const char* flag : {"--strategies", "--nodes", "--gpus-per-node", "--repeats", "--partition", "--account",
                           "--time", "--constraint", "--qos", "--gres-type", "--cpus-per-task", "--global-batch",
                           "--cpu", "--hpcbench", "run_args"})
    if (sub.count(flag) > 0)
      fail("--resume takes every job and its settings from {}/sweep.json; {} cannot change them (write a new "
           "sweep into another --out)", a.out, std::string(flag) == "run_args" ? "run flags after '--'" : flag);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(a.out) / "sweep.json", ec))
    fail("--resume --out {}: no sweep.json there{} (write the sweep first, without --resume)", a.out,
         ec ? " (" + ec.message() + ")" : "");
  auto sweep = sweep::read_manifest(a.out);
  auto plan = sweep::prepare_resume(sweep, a.out);
  for (const auto& k : plan.kept) fmt::print("{:<16} {} (left as it is)\n", k.job, k.progress);
  for (const auto& r : plan.resubmit) fmt::print("{:<16} {} (submitting)\n", r.job, r.progress);
  int rc = 0;
  if (!plan.resubmit.empty()) {
    auto s = sweep::submit_sweep(sweep, "", a.sbatch_timeout_s);
    if (s.failed > 0) rc = 1;
  }
  print_jobs(sweep);
  fmt::print("Sweep: {} ({} jobs; {} submitted now, {} left as they were)\n", (sweep.dir / "sweep.json").string(),
             sweep.jobs.size(), plan.resubmit.size(), plan.kept.size());
  return rc;
}

}  // namespace

Action add_sweep(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "sweep", "Write one SLURM job script per strategy x nodes x GPUs per node (plus the 1-device "
               "baseline) into a sweep folder with a sweep.json manifest; --submit queues them");
  auto a = std::make_shared<SweepArgs>();
  sub->add_option("--strategies", a->strategies,
                  "Comma-separated strategy labels, as `run --strategy` takes them (" + strategies::spec_names() +
                      "; zero:stage=3,prefetch=off; default: every strategy with one process per device)");
  sub->add_option("--nodes", a->nodes, "Comma-separated node counts")->capture_default_str();
  sub->add_option("--gpus-per-node", a->gpus,
                  "Comma-separated GPUs per node (ranks per node with --cpu)")->capture_default_str();
  sub->add_option("--out", a->out, "Sweep folder (default results/sweeps/sweep-<time>)");
  sub->add_option("--repeats", a->opts.repeats,
                  "Jobs per configuration (<name>-r1 ... -rN, sharing a repeat_group), so that the report has "
                  "intervals; they land on whatever nodes SLURM gives, as repeats should")
      ->capture_default_str();
  sub->add_flag("--submit", a->submit, "Queue every job with sbatch --parsable, record the job ids");
  sub->add_flag("--resume", a->resume,
                "Submit, in the sweep folder --out already holds, the jobs that are missing or failed: never "
                "submitted, refused by sbatch, or ended without results (queued, running and finished jobs stay)");
  sub->add_option("--sbatch-timeout", a->sbatch_timeout_s,
                  "Seconds one sbatch may take before it is stopped and submission ends there")
      ->capture_default_str();
  sub->add_option("--partition", a->opts.partition, "sbatch --partition");
  sub->add_option("--account", a->opts.account, "sbatch --account");
  sub->add_option("--time", a->opts.time, "sbatch --time (e.g. 00:30:00)");
  sub->add_option("--constraint", a->opts.constraint, "sbatch --constraint");
  sub->add_option("--qos", a->opts.qos, "sbatch --qos");
  sub->add_option("--gres-type", a->opts.gres_type, "GPU type in --gres=gpu:<type>:N (e.g. a100)");
  sub->add_option("--cpus-per-task", a->opts.cpus_per_task, "sbatch --cpus-per-task (threads per rank)");
  sub->add_option("--global-batch", a->opts.global_batch,
                  "Sequences per optimizer step for every job (--batch-size = this / data-parallel replicas: the "
                  "devices, or the groups that hold one model between them), so that the report can give speedups; "
                  "must divide by every job's replicas");
  sub->add_flag("--cpu", a->opts.cpu, "CPU cluster: no --gres, one rank per slot, Gloo, --device cpu");
  sub->add_option("--hpcbench", a->hpcbench,
                  "The binary the jobs run, on a file system the nodes share (default: this one)");
  sub->add_option("run_args", a->opts.run_args, "After '--': extra 'hpcbench run' flags for every job");
  return [a, sub] {
    if (a->resume) return resume_sweep(*a, *sub);
    auto& o = a->opts;
    std::string labels = a->strategies;
    if (labels.empty())
      for (auto* spec : strategies::specs())
        if (spec->traits().devices_option.empty()) labels += (labels.empty() ? "" : ",") + spec->name();
    o.strategies = sweep::parse_strategy_list(labels, "--strategies");
    o.nodes = sweep::parse_int_list(a->nodes, "--nodes");
    o.gpus_per_node = sweep::parse_int_list(a->gpus, "--gpus-per-node");
    o.out_dir = a->out.empty() ? "results/sweeps/sweep-" + local_timestamp() : a->out;
    std::error_code ec;
    o.hpcbench = a->hpcbench.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec)
                                     : std::filesystem::absolute(a->hpcbench, ec);
    if (ec || o.hpcbench.empty()) fail("--hpcbench: cannot tell where the hpcbench binary is; pass it");
    if (!std::filesystem::exists(o.hpcbench, ec))
      fail("--hpcbench {}: {}", o.hpcbench.string(), ec ? ec.message() : "no such file");
    check_run_flags(o, sweep::plan_jobs(o));
    auto sweep = sweep::write_sweep(o);
    int rc = 0;
    if (a->submit) {
      auto s = sweep::submit_sweep(sweep, "", a->sbatch_timeout_s);
      if (s.failed > 0) rc = 1;
    }
    print_jobs(sweep);
    fmt::print("Sweep: {} ({} jobs{})\n", (sweep.dir / "sweep.json").string(), sweep.jobs.size(),
               a->submit ? "" : "; submit with --submit or sbatch <script>");
    return rc;
  };
}

}  // namespace hpcbench::cli
