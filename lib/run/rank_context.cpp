#include "run/rank_context.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "core/hostinfo.h"
#include "distributed/process_group.h"

namespace hpcbench::run {

namespace {

// The variables that steer NCCL and the sockets; they reach every rank
// through the environment and are shown in the run header.
void log_network_settings() {
  for (auto& [k, v] : job_environment())
    if (k.starts_with("NCCL_") || k.starts_with("GLOO_") || k.starts_with("TORCH_NCCL") ||
        k == "MASTER_ADDR" || k == "MASTER_PORT")
      spdlog::info("  {}={}", k, v);
}

}  // namespace

RunContext rank_context(const dist::RankLayout& layout, const train::TrainConfig& cfg, const strategies::Choice& choice,
                        const JobOptions& o) {
  RunContext ctx;
  ctx.repeat_group = o.repeat_group;
  ctx.repeat_index = o.repeat_index;
  if (layout.world_size <= 1 && !choice.spec().traits().needs_comm) return ctx;
  dist::CommOptions copts;
  copts.elide_single_rank = !o.keep_collectives;
  copts.backend = o.backend;
  copts.allow_shared_device = o.allow_shared_gpu;
  copts.timeout = std::chrono::milliseconds(static_cast<long long>(o.collective_timeout_s * 1000));
  copts.connect_timeout = std::chrono::milliseconds(static_cast<long long>(o.connect_timeout_s * 1000));
  ctx.comm = std::make_shared<dist::Comm>(layout, dist::select_device(cfg.device, layout, o.allow_shared_gpu), copts);
  ctx.rank = layout.rank;
  ctx.world_size = layout.world_size;
  ctx.local_rank = layout.local_rank;
  ctx.nodes = layout.num_nodes;
  ctx.gpus_per_node = layout.local_world_size;
  // A rank's host is SLURM's name for its node where there is one: on a
  // cluster it is the host name anyway, and on a test cluster of several
  // slurmd on one machine it is what tells the ranks' nodes apart.
  const char* node = std::getenv("SLURMD_NODENAME");
  std::string host = node && *node ? node : hostname();
  auto all = ctx.comm->exchange("run/host", host + "\t" + ctx.comm->device().str() + "\t" +
                                                std::to_string(::getpid()));
  std::string hosts;
  for (auto& h : all) hosts += (hosts.empty() ? "" : " ") + h.substr(0, h.find('\t'));
  ctx.hosts = hosts;
  if (const char* job = std::getenv("SLURM_JOB_ID")) ctx.slurm_job_id = job;
  if (ctx.rank == 0) {
    spdlog::info("job: {}; backend {}, collective timeout {} s", dist::describe(layout), ctx.comm->backend_name(),
                 o.collective_timeout_s);
    for (size_t r = 0; r < all.size(); ++r) {
      auto a = all[r].find('\t'), b = all[r].rfind('\t');
      spdlog::info("  rank {:>3}  host {:<16} device {:<8} pid {}", r, all[r].substr(0, a),
                   all[r].substr(a + 1, b - a - 1), all[r].substr(b + 1));
    }
    log_network_settings();
  }
  return ctx;
}

}  // namespace hpcbench::run
