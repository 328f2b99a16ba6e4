#include "run/loop.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "core/progress.h"
#include "distributed/process_group.h"
#include "run/rank_timing.h"
#include "core/error.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/cuda_graph.h"
#include "train/op_count.h"
#include "train/optimizer.h"
#include "train/samples.h"
#include "train/setup.h"
#include "train/step_timer.h"

namespace hpcbench::run {

namespace {

using train::Phase;

// Gloo's collectives are timed on host clocks on any device (a GPU shared by
// several ranks): its works have no device duration.
train::CommTiming comm_timing(const c10::Device& device, const RunContext& ctx) {
  if (ctx.comm && ctx.comm->wait_mode() == dist::WaitMode::HostBlocking) return train::CommTiming::HostClocks;
  return device.is_cpu() ? train::CommTiming::HostClocks : train::CommTiming::WorkDuration;
}

// The job's Comm reports every collective to the step timer (one timing
// model for every strategy, train/step_timer.h), and stops before the timer
// goes, whichever way the loop ends.
struct ObserverScope {
  dist::Comm* comm;
  ObserverScope(dist::Comm* comm, dist::CommObserver* timer) : comm(comm) {
    if (comm) comm->set_observer(timer);
  }
  ~ObserverScope() {
    if (comm) comm->set_observer(nullptr);
  }
};

// Eager steps before the capture (--cuda-graph): the first allocates the
// optimizer's states, the cuBLAS and NCCL workspaces and the caching
// allocator's blocks, which must all exist before a capture, as torch's
// whole-network capture example warms up before capturing.
constexpr int64_t kGraphWarmupSteps = 2;

// The capture's bracket: the Comm's hang monitors paused and the step timer
// told, undone however the capture ends.
struct CaptureScope {
  train::StepTimer& timer;
  explicit CaptureScope(train::StepTimer& timer) : timer(timer) {
    dist::set_capturing(true);
    timer.capture_begin();
  }
  ~CaptureScope() {
    timer.capture_end();
    dist::set_capturing(false);
  }
};

}  // namespace

Steps train_steps(Run& run, const train::TrainConfig& cfg, const RunContext& ctx, const TrainHooks& hooks,
                  monitor::JobSampling& sampling, tensorboard::RunLog& tb) {
  const bool leader = ctx.rank == 0;
  auto& strategy = *run.strategy;
  const auto& topo = run.topology;
  auto& updater = *topo.updater;
  const auto& data = *run.data;
  const int64_t n = data.size();
  const auto device = run.device;
  const int64_t warmup = static_cast<int64_t>(std::ceil(cfg.warmup_ratio * run.total_steps));
  train::LinearSchedule schedule(updater.optimizer(), cfg.lr, warmup, run.total_steps);
  train::GradScaler scaler(device, cfg.precision == "fp16");
  auto params = updater.params();

  reset_peak_memory(device);
  train::StepTimer timer(device, comm_timing(device, ctx));
  ObserverScope observer(ctx.comm.get(), &timer);
  Steps out;
  out.records.reserve(static_cast<size_t>(run.total_steps));
  // A bar only where a person watches (the log lines below are the record).
  LoopProgress progress("training", "steps", run.total_steps, leader && ::isatty(STDERR_FILENO), true,
                        std::chrono::milliseconds(200));
  auto loop_start = std::chrono::steady_clock::now();
  train::OpCounter ops(train::count_ops_requested());  // HPCBENCH_COUNT_OPS=1: ATen operations per step
  train::SyncDetector syncs(train::check_syncs_requested());  // HPCBENCH_CHECK_SYNC=1: host syncs in the step
  const double slow_ms = test_slow_rank_ms(ctx.rank);

  // --cuda-graph (docs/gpu.md, "CUDA graph"): the graph-ready step, captured
  // once after warm-up and replayed where the device allows it, run as it is
  // elsewhere (a CPU), so that the CPU suite tests what is captured.
  std::unique_ptr<train::StaticBatches> statics;
  std::unique_ptr<train::StepGraph> graph;
  train::FusedAdamW* fused_adamw = nullptr;
  std::pair<at::Tensor, at::Tensor> captured;  // the graph's loss and norm, refreshed by each replay
  if (cfg.cuda_graph) {
    if (scaler.enabled()) fail("--cuda-graph with --precision fp16: loss scaling reads its verdict on the host");
    fused_adamw = dynamic_cast<train::FusedAdamW*>(&updater.optimizer());
    if (!fused_adamw) fail("--cuda-graph: the strategy's optimizer takes no tensor learning rate (internal)");
    fused_adamw->tensor_lr();
    statics = std::make_unique<train::StaticBatches>(cfg.grad_accum, run.micro_rows, data.seq_len(), device);
    if (auto why = train::capture_unavailable(device); !why.empty()) {
      out.cuda_graph = "not captured: " + why;
      if (leader) spdlog::warn("--cuda-graph: the step is not captured ({}); the graph-ready step runs eagerly", why);
    } else {
      if (ctx.comm && ctx.comm->wait_mode() == dist::WaitMode::HostBlocking)
        fail("--cuda-graph on {}: Gloo's collectives block the host, which a CUDA graph cannot capture; use "
             "--backend nccl", device.str());
      graph = std::make_unique<train::StepGraph>(device);
      timer.use_graph_events();
      out.cuda_graph = "captured";
    }
  }

  int64_t step = 0;
  for (int64_t epoch = 0; step < run.total_steps && !out.stopped; ++epoch) {
    auto order = train::epoch_indices(n, epoch, cfg.seed, topo.data_rank, topo.data_ranks);
    for (int64_t m = 0; m + cfg.grad_accum <= run.micro_per_epoch && step < run.total_steps; m += cfg.grad_accum) {
      if (hooks.stop_before && (out.stopped = hooks.stop_before(step))) break;
      sampling.set_step(step + 1);
      // The timed window's first boundary, read exactly (energy counters).
      if (step == cfg.timing_warmup_steps) sampling.sample_now();
      timer.begin();
      out.origin.emplace_back(epoch, m);
      at::Tensor loss_sum, norm;
      bool finite = true;
      if (!cfg.cuda_graph) {
        for (int64_t a = 0; a < cfg.grad_accum; ++a) {
          int64_t begin = (m + a) * run.micro_rows;
          int64_t end = std::min<int64_t>(begin + run.micro_rows, order.size(0));
          auto batch = topo.reads_batches ? data.gather_to(order.slice(0, begin, end), device) : train::Batch{};
          timer.mark(Phase::Data);
          if (a == 0) syncs.arm();
          if (slow_ms > 0 && a == 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms));
          // Each micro-batch's loss is a mean over its rows; dividing by the
          // accumulation count makes the summed gradient that of the mean over
          // the whole optimizer step, as Hugging Face's Trainer does.
          double scale = scaler.scale() / static_cast<double>(cfg.grad_accum);
          auto loss = strategy.forward_backward(run.model, batch, scale, a + 1 == cfg.grad_accum, timer);
          if (loss.defined()) loss_sum = loss_sum.defined() ? loss_sum + loss : loss;
        }
        strategy.finish_gradients(timer);
        // Only fp16's loss scaling can find overflows (one host sync a step to
        // read the verdict, as torch's GradScaler); sharded ranks then agree
        // on it (a collective), so without scaling nothing is asked.
        finite = !scaler.enabled() || updater.all_finite(scaler.unscale(params));
        if (finite && cfg.max_grad_norm > 0) norm = updater.clip(cfg.max_grad_norm);
        if (finite) updater.step();
      } else {
        // The step's batches go into the fixed buffers. A short micro-batch
        // (an epoch's last) does not fit them: that step runs the same code
        // eagerly on batches of its own, outside the graph.
        bool full = true;
        for (int64_t a = 0; a < cfg.grad_accum; ++a)
          full = full && std::min<int64_t>((m + a + 1) * run.micro_rows, order.size(0)) - (m + a) * run.micro_rows ==
                             run.micro_rows;
        std::vector<train::Batch> own(static_cast<size_t>(cfg.grad_accum));
        for (int64_t a = 0; a < cfg.grad_accum && topo.reads_batches; ++a) {
          int64_t begin = (m + a) * run.micro_rows;
          int64_t end = std::min<int64_t>(begin + run.micro_rows, order.size(0));
          auto rows = order.slice(0, begin, end).contiguous();
          if (full) statics->load(data, rows, a);
          else own[static_cast<size_t>(a)] = data.gather_to(rows, device);
        }
        // The rates of this step into the optimizer's tensors, before the
        // graph that reads them.
        fused_adamw->load_lr();
        timer.mark(Phase::Data);
        syncs.arm();
        if (slow_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms));
        // What the graph holds: nothing in it reads the host (no sync, no
        // decision on a device value), and it is the same every step.
        auto graph_ready_step = [&]() -> std::pair<at::Tensor, at::Tensor> {
          at::Tensor losses, clipped;
          const double scale = 1.0 / static_cast<double>(cfg.grad_accum);
          for (int64_t a = 0; a < cfg.grad_accum; ++a) {
            const auto& batch = full && topo.reads_batches ? statics->slot(a) : own[static_cast<size_t>(a)];
            auto loss = strategy.forward_backward(run.model, batch, scale, a + 1 == cfg.grad_accum, timer);
            if (loss.defined()) losses = losses.defined() ? losses + loss : loss;
          }
          strategy.finish_gradients(timer);
          if (cfg.max_grad_norm > 0) clipped = updater.clip(cfg.max_grad_norm);
          updater.step();
          // Host bookkeeping only, before the gradients go (see below).
          if (out.state_bytes == 0) out.state_bytes = updater.state_bytes();
          updater.zero_grad();
          timer.mark(Phase::Optimizer);
          return {losses, clipped};
        };
        if (graph && full && !graph->captured() && step >= kGraphWarmupSteps) {
          {
            CaptureScope capture(timer);
            graph->capture_begin();
            captured = graph_ready_step();
            graph->capture_end();
          }
          if (leader) spdlog::info("--cuda-graph: step {} captured; replayed from here on", step + 1);
        }
        if (graph && full && graph->captured()) {
          graph->replay();
          timer.replayed();
          std::tie(loss_sum, norm) = captured;
        } else {
          std::tie(loss_sum, norm) = graph_ready_step();
          if (!full) ++out.short_steps;
        }
      }
      // Model-state bytes are measured where they peak: gradients and the
      // optimizer's states both alive, right after the first update (not a
      // skipped fp16 step, which creates no optimizer states).
      if (finite && out.state_bytes == 0) out.state_bytes = updater.state_bytes();
      double lr = schedule.lr();  // the rate this step used
      if (!cfg.cuda_graph) {
        scaler.update(!finite);
        schedule.step();
        updater.zero_grad();
        timer.mark(Phase::Optimizer);
      } else {
        schedule.step();  // the host's rates only: the next step loads them
      }
      const auto synced = syncs.disarm();
      results::StepRecord r;
      r.times = timer.end();  // the step's one synchronisation
      if (auto f = strategy.step_facts(); f.window_ms > 0) r.bubble = f.idle_ms / f.window_ms;
      r.step = ++step;
      r.epoch = epoch;
      // Read after the step's synchronisation: these cost no extra wait.
      r.loss = loss_sum.defined() ? loss_sum.item<double>() / static_cast<double>(cfg.grad_accum) : 0.0;
      r.lr = lr;
      r.grad_norm = norm.defined() ? norm.item<double>() : 0.0;
      r.skipped = !finite;
      r.samples = train::step_samples(n, topo.data_ranks, run.micro_rows, m, cfg.grad_accum);
      out.records.push_back(r);
      if (syncs.enabled())
        std::fputs(fmt::format("syncs rank {} step {}: {} [{}]\n", ctx.rank, step, synced.size(),
                               fmt::join(synced, ", "))
                       .c_str(),
                   stderr);
      if (ops.enabled()) {
        auto report = ops.take_report(ctx.rank, step);
        if (step > cfg.timing_warmup_steps) std::fputs(report.c_str(), stderr);
      }
      if (tb.enabled())
        tb.step({r.step, r.loss, r.lr, r.grad_norm, r.times.ms, r.times.comm_ms, r.times.comm_exposed_ms,
                 static_cast<int64_t>(peak_memory_bytes(device)), r.samples, topo.computes_loss});
      // A rank without a loss of its own (a pipeline's first stages) shows
      // none rather than 0; the run's loss is combined at the end.
      const std::string loss_text = topo.computes_loss ? fmt::format("{:.4f}", r.loss) : "-";
      progress.update(step, LoopProgress::Clock::now(), fmt::format("loss {}, {:.1f} ms/step", loss_text, r.times.ms));
      if (hooks.after_step) hooks.after_step(step);
      if (leader && (step % cfg.log_every == 0 || step == run.total_steps)) {
        const double sps = 1000.0 * static_cast<double>(r.samples) / r.times.ms;
        const double peak = run.peak_tflops;
        const double mfu =
            peak > 0 ? sps * run.flops_per_sample / static_cast<double>(run.devices_total(ctx)) / (peak * 1e12) : 0;
        progress.finish();
        spdlog::info("step {:>6}/{}  loss {}  lr {:.3e}  {:8.1f} ms  {:9.1f} samples/s  MFU {}", step,
                     run.total_steps, loss_text, lr, r.times.ms, sps,
                     peak > 0 ? fmt::format("{:.1f}%", 100 * mfu) : "n/a");
      }
    }
  }
  progress.finish();
  if (graph && !graph->captured())
    out.cuda_graph = fmt::format("not captured: the run ended within the {} eager warm-up steps", kGraphWarmupSteps);
  if (out.short_steps > 0 && leader)
    spdlog::info("--cuda-graph: {} step(s) with an epoch's short last micro-batch ran outside the graph",
                 out.short_steps);
  sampling.sample_now();  // the timed window's last boundary
  sampling.set_step(monitor::kDone);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  return out;
}

}  // namespace hpcbench::run
