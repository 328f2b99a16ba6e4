#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "sweep/manifest.h"
#include "sweep/submit.h"

namespace hpcbench::cli {

namespace {

std::string default_sweep_dir() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return std::string("results/sweeps/sweep-") + buf;
}

struct SweepArgs {
  std::string strategies = "baseline,ddp,fsdp,zero";
  std::string nodes = "1";
  std::string gpus = "1";
  std::string out;
  std::string hpcbench;
  bool submit = false;
  sweep::SweepOptions opts;
};

}  // namespace

Action add_sweep(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "sweep", "Write one SLURM job script per strategy x nodes x GPUs per node (plus the 1-device "
               "baseline) into a sweep folder with a sweep.json manifest; --submit queues them");
  auto a = std::make_shared<SweepArgs>();
  sub->add_option("--strategies", a->strategies, "Comma-separated strategies")->capture_default_str();
  sub->add_option("--nodes", a->nodes, "Comma-separated node counts")->capture_default_str();
  sub->add_option("--gpus-per-node", a->gpus,
                  "Comma-separated GPUs per node (ranks per node with --cpu)")->capture_default_str();
  sub->add_option("--out", a->out, "Sweep folder (default results/sweeps/sweep-<time>)");
  sub->add_option("--repeats", a->opts.repeats,
                  "Jobs per configuration (<name>-r1 ... -rN, sharing a repeat_group), so that the report has "
                  "intervals; they land on whatever nodes SLURM gives, as repeats should")
      ->capture_default_str();
  sub->add_flag("--submit", a->submit, "Queue every job with sbatch --parsable, record the job ids");
  sub->add_option("--partition", a->opts.partition, "sbatch --partition");
  sub->add_option("--account", a->opts.account, "sbatch --account");
  sub->add_option("--time", a->opts.time, "sbatch --time (e.g. 00:30:00)");
  sub->add_option("--constraint", a->opts.constraint, "sbatch --constraint");
  sub->add_option("--qos", a->opts.qos, "sbatch --qos");
  sub->add_option("--gres-type", a->opts.gres_type, "GPU type in --gres=gpu:<type>:N (e.g. a100)");
  sub->add_option("--cpus-per-task", a->opts.cpus_per_task, "sbatch --cpus-per-task (threads per rank)");
  sub->add_option("--global-batch", a->opts.global_batch,
                  "Sequences per optimizer step for every job (per-device batch = this / devices), so that "
                  "the report can give speedups; must divide by every job's device count");
  sub->add_flag("--cpu", a->opts.cpu, "CPU cluster: no --gres, one rank per slot, Gloo, --device cpu");
  sub->add_option("--hpcbench", a->hpcbench,
                  "The binary the jobs run, on a file system the nodes share (default: this one)");
  sub->add_option("run_args", a->opts.run_args, "After '--': extra 'hpcbench run' flags for every job");
  return [a] {
    auto& o = a->opts;
    o.strategies = sweep::parse_name_list(a->strategies, "--strategies");
    o.nodes = sweep::parse_int_list(a->nodes, "--nodes");
    o.gpus_per_node = sweep::parse_int_list(a->gpus, "--gpus-per-node");
    o.out_dir = a->out.empty() ? default_sweep_dir() : a->out;
    std::error_code ec;
    o.hpcbench = a->hpcbench.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec)
                                     : std::filesystem::absolute(a->hpcbench, ec);
    if (ec || o.hpcbench.empty()) fail("--hpcbench: cannot tell where the hpcbench binary is; pass it");
    if (!std::filesystem::exists(o.hpcbench)) fail("--hpcbench {}: no such file", o.hpcbench.string());
    auto sweep = sweep::write_sweep(o);
    int rc = 0;
    if (a->submit) {
      auto s = sweep::submit_sweep(sweep);
      if (s.failed > 0) rc = 1;
    }
    fmt::print("{:<16} {:>5} {:>6} {:>5}  {:<10} {}\n", "job", "nodes", "per-nd", "ranks", "job id",
               "script");
    for (const auto& j : sweep.jobs)
      fmt::print("{:<16} {:>5} {:>6} {:>5}  {:<10} {}\n", j.name, j.nodes, j.gpus_per_node,
                 j.world_size(), j.job_id.value_or(j.state == "submit_failed" ? "FAILED" : "-"),
                 (sweep.dir / j.script).string());
    fmt::print("Sweep: {} ({} jobs{})\n", (sweep.dir / "sweep.json").string(), sweep.jobs.size(),
               a->submit ? "" : "; submit with --submit or sbatch <script>");
    return rc;
  };
}

}  // namespace hpcbench::cli
