// `hpcbench bench-comm`: collective bandwidth over c10d (Gloo on CPU, NCCL on
// GPU) in the manner of nccl-tests, started by srun, torchrun or the built-in
// --nproc-per-node launcher.
#include <fmt/format.h>

#include <torch/version.h>

#include <chrono>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "launch_flags.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hostinfo.h"
#include "core/version.h"
#include "device/device.h"
#include "distributed/bench_comm.h"
#include "distributed/launch_env.h"
#include "distributed/local_launcher.h"
#include "distributed/process_group.h"

namespace hpcbench::cli {

namespace {

struct BenchCommOptions {
  dist::BenchCommConfig cfg;
  std::vector<std::string> ops{"all"};
  std::string min_bytes = "8", max_bytes = "64M", device = "auto", output;
  double timeout_s = 300;
  LaunchFlags launch;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

int run_bench_comm(BenchCommOptions o) {
  if (o.launch.nproc_per_node > 0) return dist::launch_local({.nproc = o.launch.nproc_per_node});

  o.cfg.ops.clear();
  for (auto& op : o.ops) {
    if (op == "all") {
      for (auto& k : dist::known_ops()) o.cfg.ops.push_back(k);
    } else {
      o.cfg.ops.push_back(op);
    }
  }
  o.cfg.min_bytes = dist::parse_bytes(o.min_bytes, "--min-bytes");
  o.cfg.max_bytes = dist::parse_bytes(o.max_bytes, "--max-bytes");
  dist::validate(o.cfg);
  if (!(o.timeout_s > 0)) fail("--timeout {}: must be positive", o.timeout_s);
  o.launch.check();

  auto layout = dist::detect_layout();
  bool accel = o.device != "cpu" && (o.device != "auto" || accelerator_count() > 0);
  dist::check_layout(layout, {.nodes = o.launch.nodes, .gpus_per_node = o.launch.gpus_per_node,
                              .uses_accelerator = accel, .visible_devices = accelerator_count(),
                              .bound_by_visible_devices = dist::one_visible_device_named(dist::current_environment())});
  auto device = dist::select_device(o.device, layout);
  dist::CommOptions copts;
  copts.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  copts.connect_timeout = std::chrono::milliseconds(static_cast<long long>(o.launch.connect_timeout_s * 1000));
  // At one rank bench-comm times the backend's own single-rank path (a sanity
  // figure for the event timing), where training skips the collective.
  copts.elide_single_rank = false;
  dist::Comm comm(layout, device, copts);

  auto dd = describe(device);
  auto who = comm.exchange("who", fmt::format("host {}, pid {}, local rank {}, device {} ({})", hostname(),
                                              ::getpid(), layout.local_rank, device.str(), dd.name));
  std::string text;
  auto out = [&](const std::string& s) {
    if (comm.rank() != 0) return;
    text += s;
    fmt::print("{}", s);
    std::fflush(stdout);
  };
  out(fmt::format("# hpcbench bench-comm: hpcbench {} (commit {}), LibTorch {}\n", version(), git_commit(),
                  TORCH_VERSION));
  out(results::bench_comm_shape_line(comm.backend_name(), comm.size(), layout.num_nodes, layout.source) +
      fmt::format(", rendezvous {}:{}\n", comm.layout().master_addr, comm.layout().master_port));
  out(fmt::format("# ops {}, dtype {}, sizes {}..{} B x{}, warmup {}, iters {}, timeout {} s\n",
                  join(o.cfg.ops), o.cfg.dtype, o.cfg.min_bytes, o.cfg.max_bytes, o.cfg.factor,
                  o.cfg.warmup_iters, o.cfg.iters, o.timeout_s));
  for (size_t r = 0; r < who.size(); ++r) out(fmt::format("# rank {}: {}\n", r, who[r]));
  out("#\n");
  out(results::bench_comm_header());
  auto rows = dist::run_bench_comm(comm, o.cfg,
                                   [&](const results::BenchCommRow& row) { out(results::bench_comm_line(row)); });
  int64_t wrong = 0;
  double busbw = 0;
  for (auto& r : rows) {
    wrong += r.wrong;
    busbw += r.busbw;
  }
  out(fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED"));
  out(fmt::format("# Avg bus bandwidth    : {:.4f}\n", rows.empty() ? 0.0 : busbw / rows.size()));
  comm.barrier();
  if (comm.rank() == 0 && !o.output.empty()) write_file_atomic(o.output, text);
  return wrong == 0 ? 0 : 1;
}

}  // namespace

Action add_bench_comm(CLI::App& app) {
  auto o = std::make_shared<BenchCommOptions>();
  auto* sub = app.add_subcommand("bench-comm", "Collective bandwidth (all_reduce, all_gather, reduce_scatter, "
                                               "broadcast) like nccl-tests, over c10d Gloo (CPU) or NCCL (GPU)");
  sub->add_option("--op", o->ops, "all_reduce, all_gather, reduce_scatter, broadcast or all (repeatable)")
      ->delimiter(',');
  sub->add_option("--min-bytes", o->min_bytes, "Smallest buffer, e.g. 8, 64K, 1M")->capture_default_str();
  sub->add_option("--max-bytes", o->max_bytes, "Largest buffer")->capture_default_str();
  sub->add_option("--factor", o->cfg.factor, "Size multiplier between rows")->capture_default_str();
  sub->add_option("--iters", o->cfg.iters, "Timed iterations per size")->capture_default_str();
  sub->add_option("--warmup-iters", o->cfg.warmup_iters, "Untimed iterations per size")->capture_default_str();
  sub->add_option("--dtype", o->cfg.dtype, "float32, float64 or int32")->capture_default_str();
  sub->add_option("--device", o->device, "auto, cpu, cuda")->capture_default_str();
  sub->add_option("--timeout", o->timeout_s, "Seconds one collective may take before the job is declared "
                                              "broken")->capture_default_str();
  add_launch_flags(sub, o->launch);
  sub->add_option("--output", o->output, "Also write the table to this file (rank 0)");
  return [o] { return run_bench_comm(*o); };
}

}  // namespace hpcbench::cli
