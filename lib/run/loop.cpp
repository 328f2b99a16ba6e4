#include "run/loop.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "core/progress.h"
#include "distributed/process_group.h"
#include "run/rank_timing.h"
#include "core/error.h"
#include "train/alloc_count.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/batch_ring.h"
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

// The step timer, the device's peak memory counter reset with it: the peak
// the run reports is the loop's.
train::StepTimer peak_reset_timer(const c10::Device& device, const RunContext& ctx) {
  reset_peak_memory(device);
  return train::StepTimer(device, comm_timing(device, ctx));
}

// The job's Comm reports every collective to the current step's timer (one
// timing model for every strategy, train/step_timer.h), and stops before the
// timers go, whichever way the loop ends.
struct ObserverScope {
  dist::Comm* comm;
  explicit ObserverScope(dist::Comm* comm) : comm(comm) {}
  void set(dist::CommObserver* timer) const {
    if (comm) comm->set_observer(timer);
  }
  ~ObserverScope() { set(nullptr); }
};

// Eager steps before the capture (--cuda-graph): the first allocates the
// optimizer's states, the cuBLAS and NCCL workspaces and the caching
// allocator's blocks, which must all exist before a capture, as torch's
// whole-network capture example warms up before capturing.
constexpr int64_t kGraphWarmupSteps = 2;
// --tunableop times GEMMs (synchronising, allocating) only in eager steps
// before the capture: a tuning inside it would break the capture.
static_assert(train::kTunedSteps <= kGraphWarmupSteps);

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

// What one optimizer step computed: the summed micro-batch losses and the
// gradients' norm (tensors: nothing has waited for them yet), and whether
// fp16's loss scaling found the gradients finite.
struct StepOutcome {
  at::Tensor loss_sum, norm;
  bool finite = true;
};

// A host scalar's value, read without an ATen operation, so that the
// operation counter's steps hold what they held before the late read.
double host_value(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return *t.const_data_ptr<float>();
    case at::kDouble: return *t.const_data_ptr<double>();
    case at::kBFloat16: return static_cast<float>(*t.const_data_ptr<at::BFloat16>());
    case at::kHalf: return static_cast<float>(*t.const_data_ptr<at::Half>());
    default: fail("internal: a step's loss or norm in {}", c10::toString(t.scalar_type()));
  }
}

// A step launched and not yet read (docs/gpu.md, "Batches ahead of the
// step"): what the host knew of it when its host part ended, its timer, and
// its loss sum and gradient norm copied into host memory behind its work.
struct Launched {
  results::StepRecord r;  // all but the times, the loss and the norm
  train::StepTimer* timer = nullptr;
  std::vector<std::string> synced;
  train::AllocWindow allocs;
  std::string ops;  // HPCBENCH_COUNT_OPS's lines for the step
  at::Tensor loss, norm;  // host; undefined where the step had none
};

// Where an optimizer step's rows come from: the epoch, its order of the
// samples and the step's first micro-batch in it.
struct StepPos {
  int64_t epoch = 0, m = 0;
  at::Tensor order;
};

// The loop's state, from the schedule to the progress bar, in the order it
// is made (and unmade in reverse, however the loop ends).
class StepLoop {
 public:
  StepLoop(Run& run, const RunContext& ctx, const LoopObservers& obs);
  Steps run();

 private:
  void set_up_graph();
  StepPos epoch_start(int64_t epoch) const;
  StepPos following(const StepPos& p) const;
  std::vector<at::Tensor> step_rows(const StepPos& p) const;
  std::vector<train::Batch> step_batches(const StepPos& p, bool& fixed);
  StepOutcome device_step(const StepPos& p);
  StepOutcome step_body(const std::vector<train::Batch>& batches);
  void one_step(const StepPos& p, const StepPos& next);
  void keep_values(const StepOutcome& o, Launched& s);
  void read(Launched& s);
  void report(const Launched& s);
  std::string step_kind(bool was_captured, int64_t short_before) const;
  // Micro-batch `a` of the step starting at micro-step m: rows [begin, end) of the epoch's order.
  std::pair<int64_t, int64_t> rows_of(const at::Tensor& order, int64_t m, int64_t a) const {
    const int64_t begin = (m + a) * b_.micro_rows;
    return {begin, std::min<int64_t>(begin + b_.micro_rows, order.size(0))};
  }

  Run& run_;
  const RunContext& ctx_;
  const LoopObservers& obs_;
  const train::TrainConfig& cfg_;
  const BatchPlan& b_;
  const strategies::Topology& topo_;
  strategies::Updater& updater_;
  const bool leader_;
  train::LinearSchedule schedule_;
  train::GradScaler scaler_;
  std::vector<at::Tensor> params_;
  // Two step timers, alternating: step k is read (its timer's end(), the
  // step's one synchronisation) after step k + 1 was launched, which the
  // other times, so that the device never waits for the host between steps.
  // timer_: the current step's.
  train::StepTimer timer_a_, timer_b_;
  train::StepTimer* timer_ = &timer_a_;
  ObserverScope observer_;
  // --no-batch-prefetch: each step read at its end, as before the double buffering.
  bool late_read_;
  std::optional<Launched> launched_;
  // Each timer's host copies of its step's loss and norm (pinned on an
  // accelerator), made at its first step.
  std::array<std::pair<at::Tensor, at::Tensor>, 2> host_values_;
  // The parity of the steps (step_ % 2) whose replays record the twins of
  // the graph's events; none before the capture or where they could not be set.
  std::optional<int64_t> twin_parity_;
  Steps out_;
  // A bar only where a person watches (the log lines are the record).
  LoopProgress progress_;
  std::chrono::steady_clock::time_point loop_start_;
  train::OpCounter ops_;      // HPCBENCH_COUNT_OPS=1: ATen operations per step
  train::SyncDetector syncs_;  // HPCBENCH_CHECK_SYNC=1: host syncs in the step
  train::AllocCounter allocs_;  // HPCBENCH_CHECK_ALLOC=1: storage made or freed across the step's bounds
  const double slow_ms_;
  // --cuda-graph (docs/gpu.md, "CUDA graph"): the graph-ready step, captured
  // once after warm-up and replayed where the device allows it, run as it is
  // elsewhere (a CPU), so that the CPU suite tests what is captured.
  std::unique_ptr<train::StaticBatches> statics_;
  std::unique_ptr<train::StepGraph> graph_;
  train::FusedAdamW* fused_adamw_ = nullptr;
  // The next step's batches staged while this one runs (--no-batch-prefetch:
  // none); made after the graph's stream is current, and gone before it.
  std::unique_ptr<train::BatchRing> ring_;
  StepOutcome captured_;  // the graph's loss and norm, refreshed by each replay
  int64_t step_ = 0;
  StepProfiler profiler_;  // --profile
  train::GemmTuning tuning_;  // --tunableop: on from here, tuning in step 1
};

StepLoop::StepLoop(Run& run, const RunContext& ctx, const LoopObservers& obs)
    : run_(run),
      ctx_(ctx),
      obs_(obs),
      cfg_(run.cfg),
      b_(run.batch),
      topo_(run.topology),
      updater_(*run.updater),
      leader_(ctx.rank == 0),
      schedule_(updater_.optimizer(), cfg_.lr, static_cast<int64_t>(std::ceil(cfg_.warmup_ratio * b_.total_steps)),
                b_.total_steps),
      scaler_(run.device, cfg_.precision == "fp16"),
      params_(updater_.params()),
      timer_a_(peak_reset_timer(run.device, ctx)),
      timer_b_(run.device, comm_timing(run.device, ctx)),
      observer_(ctx.comm.get()),
      late_read_(run.cfg.batch_prefetch),
      progress_("training", "steps", b_.total_steps, leader_ && ::isatty(STDERR_FILENO), true,
                std::chrono::milliseconds(200)),
      loop_start_(std::chrono::steady_clock::now()),
      ops_(train::count_ops_requested()),
      syncs_(train::check_syncs_requested()),
      allocs_(train::check_allocs_requested()),
      slow_ms_(test_slow_rank_ms(ctx.rank)),
      profiler_(cfg_.profile, run.device, leader_),
      tuning_(cfg_.tunableop, run.device) {
  out_.records.reserve(static_cast<size_t>(b_.total_steps));
  if (run_.engine.graph()) set_up_graph();
  if (cfg_.batch_prefetch && topo_.reads_batches)
    ring_ = std::make_unique<train::BatchRing>(b_.grad_accum, b_.micro_rows, run_.data->seq_len(), run.device);
  profiler_.check(b_.total_steps, graph_ ? kGraphWarmupSteps + 1 : 0);
  if (leader_ && cfg_.tunableop && !tuning_.on()) spdlog::warn("--tunableop: {}", tuning_.why_off());
}

// The engine refused what a graph cannot hold before the run started
// (train/engine.cpp: fp16's loss scaling, activation checkpointing).
void StepLoop::set_up_graph() {
  fused_adamw_ = dynamic_cast<train::FusedAdamW*>(&updater_.optimizer());
  if (!fused_adamw_) fail("--cuda-graph: the strategy's optimizer takes no tensor learning rate (internal)");
  fused_adamw_->tensor_lr();
  const auto device = run_.device;
  statics_ = std::make_unique<train::StaticBatches>(b_.grad_accum, b_.micro_rows, run_.data->seq_len(), device);
  if (auto why = train::capture_unavailable(device); !why.empty()) {
    out_.cuda_graph = "not captured: " + why;
    if (leader_) spdlog::warn("--cuda-graph: the step is not captured ({}); the graph-ready step runs eagerly", why);
    return;
  }
  if (ctx_.comm && ctx_.comm->wait_mode() == dist::WaitMode::HostBlocking)
    fail("--cuda-graph on {}: Gloo's collectives block the host, which a CUDA graph cannot capture; use "
         "--backend nccl", device.str());
  graph_ = std::make_unique<train::StepGraph>(device);
  timer_a_.use_graph_events();
  timer_b_.use_graph_events();
  out_.cuda_graph = "captured";
}

StepPos StepLoop::epoch_start(int64_t epoch) const {
  return {epoch, 0, train::epoch_indices(run_.data->size(), epoch, cfg_.seed, topo_.data_rank, topo_.data_ranks)};
}

// The step after `p`: the next micro-batches of its epoch, else the next
// epoch's first.
StepPos StepLoop::following(const StepPos& p) const {
  if (p.m + 2 * b_.grad_accum <= b_.micro_per_epoch) return {p.epoch, p.m + b_.grad_accum, p.order};
  return epoch_start(p.epoch + 1);
}

std::vector<at::Tensor> StepLoop::step_rows(const StepPos& p) const {
  std::vector<at::Tensor> out;
  for (int64_t a = 0; a < b_.grad_accum; ++a) {
    auto [begin, end] = rows_of(p.order, p.m, a);
    out.push_back(p.order.slice(0, begin, end).contiguous());
  }
  return out;
}

// The step's micro-batches on the device: under a graph into its fixed
// buffers (`fixed`), except a short one (an epoch's last), which does not
// fit them and runs the same body on batches of its own, outside the graph.
// With the ring they were staged while the previous step ran (the first
// step stages its own now); the graph's buffers are then filled from the
// ring's by one device copy each.
std::vector<train::Batch> StepLoop::step_batches(const StepPos& p, bool& fixed) {
  fixed = statics_ != nullptr;
  for (int64_t a = 0; a < b_.grad_accum && fixed; ++a) {
    auto [begin, end] = rows_of(p.order, p.m, a);
    fixed = end - begin == b_.micro_rows;
  }
  std::vector<train::Batch> out(static_cast<size_t>(b_.grad_accum));
  if (!topo_.reads_batches) return out;
  if (ring_) {
    if (!ring_->staged()) ring_->stage(*run_.data, step_rows(p));
    auto taken = ring_->take();
    for (int64_t a = 0; a < b_.grad_accum; ++a)
      out[static_cast<size_t>(a)] = fixed ? statics_->assign(a, ring_->taken_flat(a)) : taken[static_cast<size_t>(a)];
    return out;
  }
  const auto rows = step_rows(p);
  for (int64_t a = 0; a < b_.grad_accum; ++a) {
    const auto& r = rows[static_cast<size_t>(a)];
    out[static_cast<size_t>(a)] = fixed ? statics_->load(*run_.data, r, a) : run_.data->gather_to(r, run_.device);
  }
  return out;
}

// The one step body, eager or captured (a graph records exactly this): each
// micro-batch's forward and backward, the gradients finished, clipped and
// stepped, then zeroed. Nothing in it reads the host, except fp16's loss
// scaling (eager only): its overflow verdict is read each step (one sync,
// as torch's GradScaler) and skips the update on it.
StepOutcome StepLoop::step_body(const std::vector<train::Batch>& batches) {
  StepOutcome o;
  // Each micro-batch's loss is a mean over its rows; dividing by the
  // accumulation count makes the summed gradient that of the mean over the
  // whole optimizer step, as Hugging Face's Trainer does.
  const double scale = scaler_.scale() / static_cast<double>(b_.grad_accum);
  for (int64_t a = 0; a < b_.grad_accum; ++a) {
    auto loss = run_.strategy->forward_backward(run_.model, batches[static_cast<size_t>(a)], scale,
                                                a + 1 == b_.grad_accum, *timer_);
    if (loss.defined()) o.loss_sum = o.loss_sum.defined() ? o.loss_sum + loss : loss;
  }
  run_.strategy->finish_gradients(*timer_);
  // Sharded ranks agree on the verdict (a collective); without scaling
  // nothing is asked.
  o.finite = !scaler_.enabled() || updater_.all_finite(scaler_.unscale(params_));
  if (o.finite && cfg_.max_grad_norm > 0) o.norm = updater_.clip(cfg_.max_grad_norm);
  if (o.finite) updater_.step();
  // Model-state bytes where they peak: gradients and the optimizer's states
  // both alive, right after the first update (not a skipped fp16 step, which
  // creates no optimizer states). Host bookkeeping: nothing for a graph.
  if (o.finite && out_.state_bytes == 0) out_.state_bytes = updater_.state_bytes();
  updater_.zero_grad();
  timer_->mark(Phase::Optimizer);
  return o;
}

// The step as the device runs it: the body, captured once after the eager
// warm-up and replayed from then on where a graph runs.
StepOutcome StepLoop::device_step(const StepPos& p) {
  bool fixed = false;
  const auto batches = step_batches(p, fixed);
  if (obs_.hooks.batch_seen)
    for (size_t a = 0; a < batches.size(); ++a) obs_.hooks.batch_seen(step_ + 1, static_cast<int64_t>(a), batches[a]);
  // This step's rates into the optimizer's tensors, before the graph reads them.
  if (fused_adamw_) fused_adamw_->load_lr();
  timer_->mark(Phase::Data);
  syncs_.arm();
  allocs_.arm();
  if (slow_ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms_));
  if (graph_ && fixed && !graph_->captured() && step_ >= kGraphWarmupSteps) {
    {
      CaptureScope capture(*timer_);
      graph_->capture_begin();
      captured_ = step_body(batches);
      graph_->capture_end();
    }
    // The other timer's replays record events of its own in the graph's
    // event nodes: its step is read while the next replay runs.
    auto& other = timer_ == &timer_a_ ? timer_b_ : timer_a_;
    std::string why;
    try {
      why = graph_->alternate_events(other.adopt_capture(*timer_));
    } catch (const std::exception& e) {
      why = e.what();
    }
    // Without the twins a replay would re-record the events the previous
    // step's reading needs: each step is then read at its end, said in the
    // record, rather than the run lost or its times misread.
    if (why.empty()) twin_parity_ = 1 - step_ % 2;
    if (!why.empty() && late_read_) {
      late_read_ = false;
      out_.cuda_graph += "; each step read at its end (" + why + ")";
      if (leader_) spdlog::warn("--cuda-graph: each step is read at its end, not one step late: {}", why);
    }
    if (leader_) spdlog::info("--cuda-graph: step {} captured; replayed from here on", step_ + 1);
  }
  if (graph_ && fixed && graph_->captured()) {
    graph_->replay(/*twins=*/twin_parity_ == step_ % 2);
    timer_->replayed();
    return captured_;
  }
  if (statics_ && !fixed) ++out_.short_steps;
  return step_body(batches);
}

// What a step ran as, for --profile's record of what it watched.
std::string StepLoop::step_kind(bool was_captured, int64_t short_before) const {
  if (!run_.engine.graph()) return "eager";
  if (out_.short_steps > short_before) return "eager, outside the graph (a short micro-batch)";
  if (!graph_) return "graph-ready step, eager (" + out_.cuda_graph + ")";
  if (graph_->captured()) return was_captured ? "graph replay" : "capture and first replay";
  return "eager warm-up before the capture";
}

// One optimizer step: launched, then the previous step read while the
// device runs this one (docs/gpu.md, "Batches ahead of the step"). Without
// the double buffering (--no-batch-prefetch), and around the steps --profile
// watches (their kernels must fall inside their host ranges), a step is read
// at its own end.
void StepLoop::one_step(const StepPos& p, const StepPos& next) {
  timer_ = step_ % 2 == 0 ? &timer_a_ : &timer_b_;
  observer_.set(timer_);
  profiler_.begin_step(step_ + 1);
  const bool was_captured = graph_ && graph_->captured();
  const int64_t short_before = out_.short_steps;
  obs_.sampling.set_step(step_ + 1);
  // The timed window's first boundary, read exactly (energy counters).
  if (step_ == cfg_.timing_warmup_steps) obs_.sampling.sample_now();
  timer_->begin();
  out_.origin.emplace_back(p.epoch, p.m);
  const auto o = device_step(p);
  Launched s;
  s.r.lr = schedule_.lr();  // the rate this step used
  if (scaler_.enabled()) scaler_.update(!o.finite);
  schedule_.step();  // under a graph the host's rates only: the next step loads them
  s.synced = syncs_.disarm();
  s.allocs = allocs_.disarm();
  // The next step's rows, gathered and sent while the device runs this one;
  // its own data phase, so that where the host works alone (a CPU) the time
  // stays in the step.
  if (ring_ && step_ + 1 < b_.total_steps) {
    ring_->stage(*run_.data, step_rows(next));
    timer_->mark(Phase::Data);
  }
  keep_values(o, s);
  timer_->close();
  if (ops_.enabled()) s.ops = ops_.take_report(ctx_.rank, step_ + 1);
  if (auto f = run_.strategy->step_facts(); f.window_ms > 0) s.r.bubble = f.idle_ms / f.window_ms;
  s.r.step = ++step_;
  tuning_.after_step(s.r.step);
  s.r.epoch = p.epoch;
  s.r.skipped = !o.finite;
  s.r.samples = train::step_samples(run_.data->size(), topo_.data_ranks, b_.micro_rows, p.m, b_.grad_accum);
  s.timer = timer_;
  if (launched_) read(*launched_);
  launched_.reset();
  if (late_read_ && !profiler_.watches(s.r.step) && !profiler_.watches(s.r.step + 1)) launched_ = std::move(s);
  else read(s);
  profiler_.end_step(step_, step_kind(was_captured, short_before));
}

// The step's loss sum and gradient norm into host memory of its timer's,
// behind the step's work and before its closing stamp: read with the step,
// without a wait of their own (item() would wait for the next step too) and
// before the next replay overwrites the graph's outputs.
void StepLoop::keep_values(const StepOutcome& o, Launched& s) {
  auto& [loss, norm] = host_values_[timer_ == &timer_a_ ? 0 : 1];
  at::NoGradGuard no_grad;  // not detach(): an operation more a value
  auto keep = [this](at::Tensor& host, const at::Tensor& value) {
    if (!value.defined()) return at::Tensor();
    if (!host.defined())
      host = at::empty({}, value.options().device(at::kCPU).pinned_memory(!run_.device.is_cpu()));
    host.copy_(value, /*non_blocking=*/true);
    return host;
  };
  s.loss = keep(loss, o.loss_sum);
  s.norm = keep(norm, o.norm);
}

// A launched step's figures, after its synchronisation, to the record and
// whoever watches.
void StepLoop::read(Launched& s) {
  s.r.times = s.timer->end();  // the step's one synchronisation
  s.r.loss = s.loss.defined() ? host_value(s.loss) / static_cast<double>(b_.grad_accum) : 0.0;
  s.r.grad_norm = s.norm.defined() ? host_value(s.norm) : 0.0;
  out_.records.push_back(s.r);
  report(s);
}

// The step to whoever watches: the debugging counters, TensorBoard, the
// progress bar, the after-step hook and the log.
void StepLoop::report(const Launched& s) {
  const auto& r = s.r;
  const int64_t step = r.step;
  const double lr = r.lr;
  if (syncs_.enabled())
    std::fputs(fmt::format("syncs rank {} step {}: {} [{}]\n", ctx_.rank, step, s.synced.size(), fmt::join(s.synced, ", "))
                   .c_str(),
               stderr);
  if (allocs_.enabled())
    std::fputs(fmt::format("allocs rank {} step {}: {} calls, {} freed from before, {} kept from step {}\n", ctx_.rank,
                           step, s.allocs.calls, s.allocs.freed_older, s.allocs.kept, step - 1)
                   .c_str(),
               stderr);
  if (ops_.enabled() && step > cfg_.timing_warmup_steps) std::fputs(s.ops.c_str(), stderr);
  if (obs_.tb.enabled())
    obs_.tb.step({r.step, r.loss, r.lr, r.grad_norm, r.times.ms, r.times.comm_ms, r.times.comm_exposed_ms,
                  static_cast<int64_t>(peak_memory_bytes(run_.device)), r.samples, topo_.computes_loss});
  // A rank without a loss of its own (a pipeline's first stages) shows
  // none rather than 0; the run's loss is combined at the end.
  const std::string loss_text = topo_.computes_loss ? fmt::format("{:.4f}", r.loss) : "-";
  progress_.update(step, LoopProgress::Clock::now(), fmt::format("loss {}, {:.1f} ms/step", loss_text, r.times.ms));
  if (obs_.hooks.after_step) obs_.hooks.after_step(step);
  if (leader_ && (step % cfg_.log_every == 0 || step == b_.total_steps)) {
    const double sps = 1000.0 * static_cast<double>(r.samples) / r.times.ms;
    const double peak = run_.peak_tflops;
    const double mfu =
        peak > 0 ? sps * run_.flops_per_sample / static_cast<double>(run_.devices_total(ctx_)) / (peak * 1e12) : 0;
    progress_.finish();
    spdlog::info("step {:>6}/{}  loss {}  lr {:.3e}  {:8.1f} ms  {:9.1f} samples/s  MFU {}", step, b_.total_steps,
                 loss_text, lr, r.times.ms, sps, peak > 0 ? fmt::format("{:.1f}%", 100 * mfu) : "n/a");
  }
}

Steps StepLoop::run() {
  for (auto p = epoch_start(0); step_ < b_.total_steps; ) {
    if (obs_.hooks.stop_before && (out_.stopped = obs_.hooks.stop_before(step_))) break;
    auto next = following(p);
    one_step(p, next);
    p = std::move(next);
  }
  if (launched_) read(*launched_);
  launched_.reset();
  progress_.finish();
  out_.profile = profiler_.take();
  out_.tunableop = tuning_.take();
  if (graph_ && !graph_->captured())
    out_.cuda_graph = fmt::format("not captured: the run ended within the {} eager warm-up steps", kGraphWarmupSteps);
  if (out_.short_steps > 0 && leader_)
    spdlog::info("--cuda-graph: {} step(s) with an epoch's short last micro-batch ran outside the graph",
                 out_.short_steps);
  obs_.sampling.sample_now();  // the timed window's last boundary
  obs_.sampling.set_step(monitor::kDone);
  out_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start_).count();
  return std::move(out_);
}

}  // namespace

Steps train_steps(Run& run, const RunContext& ctx, const LoopObservers& obs) { return StepLoop(run, ctx, obs).run(); }

}  // namespace hpcbench::run
