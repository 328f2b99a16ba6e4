#include "run/loop.h"

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
#include "train/amp.h"
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
  const double slow_ms = test_slow_rank_ms(ctx.rank);

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
      at::Tensor loss_sum;
      for (int64_t a = 0; a < cfg.grad_accum; ++a) {
        int64_t begin = (m + a) * run.micro_rows;
        int64_t end = std::min<int64_t>(begin + run.micro_rows, order.size(0));
        auto batch = topo.reads_batches ? data.gather_to(order.slice(0, begin, end), device) : train::Batch{};
        timer.mark(Phase::Data);
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
      bool finite = !scaler.enabled() || updater.all_finite(scaler.unscale(params));
      at::Tensor norm;
      if (finite && cfg.max_grad_norm > 0) norm = updater.clip(cfg.max_grad_norm);
      if (finite) updater.step();
      // Model-state bytes are measured where they peak: gradients and the
      // optimizer's states both alive, right after the first update (not a
      // skipped fp16 step, which creates no optimizer states).
      if (finite && out.state_bytes == 0) out.state_bytes = updater.state_bytes();
      scaler.update(!finite);
      double lr = schedule.lr();  // the rate this step used
      schedule.step();
      updater.zero_grad();
      timer.mark(Phase::Optimizer);
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
  sampling.sample_now();  // the timed window's last boundary
  sampling.set_step(monitor::kDone);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  return out;
}

}  // namespace hpcbench::run
