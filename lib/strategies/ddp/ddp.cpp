#include "strategies/ddp/ddp.h"

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

#include "core/error.h"
#include "dist/process_group.h"
#include "train/amp.h"

namespace hpcbench::strategies {

namespace {

// DDP's _DEFAULT_FIRST_BUCKET_BYTES: a small first bucket (the last layers'
// gradients, ready first) so that communication starts early in backward.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;

struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
  GradReadyHook(Ddp* ddp, size_t index) : ddp(ddp), index(index) {}
  void operator()(const torch::autograd::Variable&) override { ddp->on_grad_ready(index); }
  Ddp* ddp;
  size_t index;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Ddp::Ddp(const StrategyOptions& options) : opts_(options) {
  if (!(options.bucket_mb > 0)) fail("--bucket-mb {}: must be positive", options.bucket_mb);
}

Ddp::~Ddp() {
  // The hooks point at this object; the model may outlive it.
  for (auto& p : params_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

std::string Ddp::options() const {
  return fmt::format("bucket_mb={:g},overlap={},buckets={}", opts_.bucket_mb, opts_.overlap ? "on" : "off",
                     buckets_.size());
}

// Reverse parameter order approximates the order in which backward produces
// the gradients, the order DDP rebuilds its buckets in after the first step.
void Ddp::assign_buckets() {
  const auto cap = static_cast<int64_t>(opts_.bucket_mb * 1024 * 1024);
  slot_.assign(params_.size(), {0, 0});
  buckets_.clear();
  int64_t bytes = 0;
  std::vector<size_t> current;
  auto close = [&] {
    if (current.empty()) return;
    Bucket b;
    b.params = current;
    buckets_.push_back(std::move(b));
    current.clear();
    bytes = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    if (!current.empty() && p.scalar_type() != params_[current.front()].scalar_type()) close();
    current.push_back(k);
    bytes += static_cast<int64_t>(p.nbytes());
    if (bytes >= (buckets_.empty() ? std::min(kFirstBucketBytes, cap) : cap)) close();
  }
  close();
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    auto& b = buckets_[bi];
    int64_t numel = 0;
    for (auto k : b.params) numel += params_[k].numel();
    b.flat = at::empty({numel}, params_[b.params.front()].options().requires_grad(false));
    int64_t off = 0;
    for (size_t pos = 0; pos < b.params.size(); ++pos) {
      const auto& p = params_[b.params[pos]];
      b.views.push_back(b.flat.narrow(0, off, p.numel()).view(p.sizes()));
      off += p.numel();
      slot_[b.params[pos]] = {bi, pos};
    }
  }
}

void Ddp::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  if (!ctx.comm) fail("--strategy ddp needs the job's communicator (internal: none was created)");
  auto& comm = *ctx.comm;
  params_.clear();
  for (auto& p : model->parameters())
    if (p.requires_grad()) params_.push_back(p);

  // Every rank must hold the same model, or the buckets would not line up
  // and the all-reduces would mix unrelated tensors.
  int64_t numel = 0;
  for (auto& p : params_) numel += p.numel();
  auto shapes = comm.exchange("ddp/model", fmt::format("{} tensors, {} elements", params_.size(), numel));
  for (size_t r = 0; r < shapes.size(); ++r)
    if (shapes[r] != shapes[0])
      fail("ddp: rank {} has a different model ({}) from rank 0 ({}): every rank must use the same --model",
           r, shapes[r], shapes[0]);

  assign_buckets();

  // Rank 0's initial state wins, whatever each rank drew.
  {
    at::NoGradGuard no_grad;
    for (auto& b : buckets_) {
      for (size_t pos = 0; pos < b.params.size(); ++pos) b.views[pos].copy_(params_[b.params[pos]]);
      comm.broadcast(b.flat, 0);
      for (size_t pos = 0; pos < b.params.size(); ++pos) params_[b.params[pos]].copy_(b.views[pos]);
    }
    for (auto& buf : model->buffers()) {
      auto t = buf.contiguous();
      comm.broadcast(t, 0);
      if (!t.is_same(buf)) buf.copy_(t);
    }
  }
  ready_.assign(params_.size(), 0);
  for (size_t k = 0; k < params_.size(); ++k)
    torch::autograd::impl::set_post_acc_grad_hooks(params_[k], std::make_unique<GradReadyHook>(this, k));
}

void Ddp::copy_in(size_t index) {
  auto [bi, pos] = slot_[index];
  auto& view = buckets_[bi].views[pos];
  const auto& grad = params_[index].grad();
  // Divided while copied in, as DDP does, so the sum is already the mean.
  if (!grad.defined()) view.zero_();
  else if (ctx_.world_size == 1) view.copy_(grad);
  else at::mul_out(view, grad, at::scalar_tensor(1.0 / ctx_.world_size, grad.options()));
}

void Ddp::on_grad_ready(size_t index) {
  if (!syncing_) return;  // an accumulating micro-step: no_sync
  std::lock_guard<std::mutex> lock(mutex_);
  if (ready_[index]) return;
  ready_[index] = 1;
  copy_in(index);
  auto& b = buckets_[slot_[index].first];
  if (--b.pending == 0) launch_ready();
}

void Ddp::launch(Bucket& b) {
  b.started = Clock::now();
  b.finished_ns = std::make_shared<std::atomic<int64_t>>(0);
  b.work = ctx_.comm->allreduce_async(b.flat);
  b.launched = true;
  auto done = b.finished_ns;
  b.work->getFuture()->addCallback([done](c10::ivalue::Future&) { done->store(now_ns()); });
}

// Buckets start in index order only: every rank must issue the same
// collectives in the same order, whatever order its hooks fire in.
void Ddp::launch_ready() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) launch(buckets_[next_bucket_++]);
}

at::Tensor Ddp::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                 bool last_micro, train::StepTimer& timer) {
  syncing_ = last_micro && opts_.overlap;
  if (last_micro) {
    std::fill(ready_.begin(), ready_.end(), 0);
    for (auto& bk : buckets_) {
      bk.pending = bk.params.size();
      bk.launched = false;
      bk.work.reset();
    }
    next_bucket_ = 0;
  }
  model::QAOutput out;
  {
    train::AutocastGuard autocast(ctx_.device.type(), ctx_.precision);
    out = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
  }
  timer.mark(train::Phase::Forward);
  (out.loss * scale).backward();
  syncing_ = false;
  timer.mark(train::Phase::Backward);
  return out.loss.detach();
}

double Ddp::finish_gradients(train::StepTimer& timer) {
  auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Without overlap every gradient is copied in now; with it, only those
    // whose hook did not fire (a parameter unused in this forward) are: they
    // take part as zeros, as with find_unused_parameters.
    for (size_t k = 0; k < params_.size(); ++k) {
      if (ready_[k]) continue;
      ready_[k] = 1;
      copy_in(k);
      --buckets_[slot_[k].first].pending;
    }
    launch_ready();
  }
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    auto& b = buckets_[bi];
    ctx_.comm->wait(b.work, fmt::format("ddp all_reduce of gradient bucket {} of {}", bi, buckets_.size()));
    at::NoGradGuard no_grad;
    for (size_t pos = 0; pos < b.params.size(); ++pos) {
      auto& p = params_[b.params[pos]];
      if (p.grad().defined()) p.mutable_grad().copy_(b.views[pos]);
      else p.mutable_grad() = b.views[pos].clone();
    }
  }
  // On an accelerator the waits only order streams; the exposed time is
  // real only once the device has caught up.
  if (!ctx_.device.is_cpu()) at::accelerator::synchronizeDevice(ctx_.device.index());
  auto t1 = Clock::now();
  timer.mark(train::Phase::Comm);

  // Communication time: the union of the buckets' in-flight intervals.
  std::vector<std::pair<int64_t, int64_t>> spans;
  const int64_t end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1.time_since_epoch()).count();
  for (auto& b : buckets_) {
    int64_t s = std::chrono::duration_cast<std::chrono::nanoseconds>(b.started.time_since_epoch()).count();
    int64_t e = b.finished_ns ? b.finished_ns->load() : 0;
    spans.emplace_back(s, e > 0 ? std::min(e, end_ns) : end_ns);
  }
  std::sort(spans.begin(), spans.end());
  int64_t total = 0, cs = 0, ce = -1;
  for (auto [s, e] : spans) {
    if (s > ce) {
      if (ce > cs) total += ce - cs;
      cs = s;
      ce = e;
    } else {
      ce = std::max(ce, e);
    }
  }
  if (ce > cs) total += ce - cs;
  // The exposed part also counts the copies back into .grad, which belong
  // to the communication too: the total is never below it.
  const double exposed = std::chrono::duration<double, std::milli>(t1 - t0).count();
  comm_ms_ = std::max(static_cast<double>(total) / 1e6, exposed);
  return exposed;
}

}  // namespace hpcbench::strategies
