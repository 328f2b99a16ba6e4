#include "sweep/job_script.h"

#include <fmt/format.h>

#include "sweep/slurm_time.h"

namespace hpcbench::sweep {

std::string shell_quote(std::string_view word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-.,/:=@%+") == std::string_view::npos)
    return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

namespace {

// The srun line that runs the job's ranks, each argument quoted for the shell.
std::string run_command(const SweepOptions& opts, const SweepJob& job, const std::filesystem::path& sweep_dir) {
  std::vector<std::string> cmd = {"srun", "\"${srun_opts[@]}\"", opts.hpcbench.string(), "run",
                                  "--strategy", job.strategy, "--results-dir",
                                  (sweep_dir / "runs").string(), "--run-name", job.name};
  if (job.repeat_index > 0)
    for (auto& a : {std::string("--repeat-group"), job.repeat_group, std::string("--repeat-index"),
                    std::to_string(job.repeat_index)})
      cmd.push_back(a);
  if (opts.cpu) {
    cmd.push_back("--device");
    cmd.push_back("cpu");
  }
  if (opts.global_batch > 0) {
    cmd.push_back("--batch-size");
    cmd.push_back(std::to_string(opts.global_batch / job.replicas()));
  }
  cmd.insert(cmd.end(), opts.run_args.begin(), opts.run_args.end());
  cmd.insert(cmd.end(), job.extra_args.begin(), job.extra_args.end());
  std::string joined;
  // Appended piece by piece rather than (i ? " " : "") + ..., on which GCC 12
  // reports false -Wstringop-overflow/-Wrestrict warnings in char_traits.h.
  for (size_t i = 0; i < cmd.size(); ++i) {
    if (i) joined += ' ';
    joined += i == 1 ? cmd[i] : shell_quote(cmd[i]);
  }
  return joined;
}

}  // namespace

std::string render_job_script(const SweepOptions& opts, const SweepJob& job,
                              const std::filesystem::path& sweep_dir) {
  std::string s;
  auto line = [&s](std::string_view text) { (s += text) += '\n'; };
  auto sbatch = [&](std::string_view option, const std::string& value, std::string_view why) {
    if (!value.empty()) line(fmt::format("#SBATCH {:<32} # {}", fmt::format("--{}={}", option, value), why));
  };
  const int tasks = job.gpus_per_node;
  line("#!/bin/bash");
  line(fmt::format("# hpcbench sweep job: strategy {} on {} node(s) x {} {} ({} ranks).", job.strategy,
                   job.nodes, job.gpus_per_node, opts.cpu ? "task(s)" : "GPU(s)", job.world_size()));
  line("# Written by `hpcbench sweep`; its sweep.json lists every job of the sweep.");
  sbatch("job-name", fmt::format("{}-{}", opts.job_name_prefix, job.name), "squeue shows this");
  sbatch("nodes", std::to_string(job.nodes), "exactly this many nodes");
  sbatch("ntasks-per-node", std::to_string(tasks),
         opts.cpu ? "one rank per CPU slot" : "one rank per GPU");
  if (!opts.cpu) {
    std::string gres = opts.gres_type.empty() ? fmt::format("gpu:{}", tasks)
                                              : fmt::format("gpu:{}:{}", opts.gres_type, tasks);
    sbatch("gres", gres, "GPUs per node, all visible to every task");
  }
  if (opts.cpus_per_task > 0)
    sbatch("cpus-per-task", std::to_string(opts.cpus_per_task), "intra-op threads per rank");
  sbatch("output", (sweep_dir / job.log).string(), "stdout and stderr of all ranks");
  sbatch("partition", opts.partition, "--partition");
  sbatch("account", opts.account, "--account");
  sbatch("time", opts.time, "--time");
  sbatch("signal", fmt::format("USR1@{}", stop_signal_margin_s(opts.time)),
         "the ranks stop at a step boundary and write their results before the time limit");
  sbatch("constraint", opts.constraint, "--constraint");
  sbatch("qos", opts.qos, "--qos");
  line("set -euo pipefail");
  line("");
  line("# Threads per rank follow the CPUs SLURM gave each task.");
  line("export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-${OMP_NUM_THREADS:-1}}");
  if (opts.cpu) {
    line("# CPU cluster: the ranks talk over Gloo. When the nodes have several network");
    line("# interfaces, choose one at submission (GLOO_SOCKET_IFNAME=ib0 sbatch ...):");
    line("# sbatch passes the submitting environment through.");
  } else {
    line("# NCCL: WARN shows failures only (INFO prints the chosen transport). The");
    line("# interface and InfiniBand adapters are the site's: set them at submission");
    line("# (NCCL_SOCKET_IFNAME=ib0 NCCL_IB_HCA=mlx5 sbatch ...), sbatch passes the");
    line("# submitting environment through. Gloo (the CPU side) follows NCCL's choice.");
    line("export NCCL_DEBUG=${NCCL_DEBUG:-WARN}");
    line("if [[ -n ${NCCL_SOCKET_IFNAME:-} && -z ${GLOO_SOCKET_IFNAME:-} && ${NCCL_SOCKET_IFNAME} != [=^]* ]]; then");
    line("  export GLOO_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME%%,*}");
    line("fi");
  }
  line("");
  line("echo \"hpcbench sweep job $SLURM_JOB_ID: " + job.name + " on $SLURM_JOB_NODELIST\"");
  const std::string joined = run_command(opts, job, sweep_dir);
  line("# One failed rank ends the step (--kill-on-bad-exit) instead of leaving the");
  line("# others waiting in a collective until the time limit. srun does not");
  line("# inherit -c from the job in every SLURM release: pass it on.");
  line("srun_opts=(--kill-on-bad-exit=1)");
  line("if [[ -n ${SLURM_CPUS_PER_TASK:-} ]]; then srun_opts+=(\"--cpus-per-task=$SLURM_CPUS_PER_TASK\"); fi");
  line(joined);
  return s;
}

}  // namespace hpcbench::sweep
