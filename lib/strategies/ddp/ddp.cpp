#include "strategies/ddp/ddp.h"

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/ScalarOps.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>

#include "core/error.h"
#include "distributed/process_group.h"
#include "strategies/ddp/buckets.h"
#include "strategies/support.h"

namespace hpcbench::strategies {

Ddp::Ddp(const Choice& choice) : choice_(choice), opts_(choice.as<ddp::DdpOptions>()) {}

Ddp::~Ddp() {
  // The hooks point at this object; the model may outlive it.
  clear_grad_hooks(params_);
}

void Ddp::assign_buckets() {
  slot_.assign(params_.size(), {0, 0});
  buckets_.clear();
  std::vector<int64_t> bytes;
  std::vector<int> dtype;
  for (auto& p : params_) {
    bytes.push_back(static_cast<int64_t>(p.nbytes()));
    dtype.push_back(static_cast<int>(p.scalar_type()));
  }
  for (auto& ids : ddp::assign_buckets(bytes, dtype, opts_.bucket_mb)) {
    Bucket b;
    b.params = std::move(ids);
    buckets_.push_back(std::move(b));
  }
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    auto& b = buckets_[bi];
    b.what = fmt::format("ddp all_reduce of gradient bucket {} of {}", bi, buckets_.size());
    int64_t numel = 0;
    for (auto k : b.params) numel += params_[k].numel();
    b.flat = at::empty({numel}, params_[b.params.front()].options().requires_grad(false));
    int64_t off = 0;
    for (size_t pos = 0; pos < b.params.size(); ++pos) {
      const auto& p = params_[b.params[pos]];
      // Shares the bucket's memory without being an autograd view: the
      // optimizer's zero_grad detaches gradients in place, which views refuse.
      auto v = at::empty({0}, b.flat.options());
      v.set_(b.flat.storage(), off, p.sizes(), p.strides());
      b.views.push_back(v);
      off += p.numel();
      slot_[b.params[pos]] = {bi, pos};
    }
  }
}

SetUp Ddp::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  if (!ctx.comm) fail("--strategy ddp needs the job's communicator (internal: none was created)");
  auto& comm = *ctx.comm;
  // Before the buckets are cut: they take the parameters' dtype, so that
  // bf16-resident weights have their gradients all-reduced in bf16 (as the
  // sharded strategies reduce in the compute dtype by default).
  masters_ = resident_weights(*model, ctx.engine);
  params_.clear();
  for (auto& p : model->parameters())
    if (p.requires_grad()) params_.push_back(p);

  // Every rank must hold the same model, or the buckets would not line up
  // and the all-reduces would mix unrelated tensors.
  int64_t numel = 0;
  for (auto& p : params_) numel += p.numel();
  check_same_model(comm, "ddp", fmt::format("{} tensors, {} elements", params_.size(), numel));

  assign_buckets();

  // Rank 0's initial state wins, whatever each rank drew. The model holds
  // no buffers (BertEmbeddings computes its position ids), so the
  // parameters are all there is to send.
  {
    at::NoGradGuard no_grad;
    // With masters, theirs is the initial state that counts: rank 0's fp32
    // masters are sent and the bf16 copies made from them.
    if (masters_ && ctx.world_size > 1) masters_->broadcast(comm);
    for (auto& b : buckets_) {
      if (ctx.world_size == 1 || masters_) break;
      for (size_t pos = 0; pos < b.params.size(); ++pos) b.views[pos].copy_(params_[b.params[pos]]);
      comm.broadcast(b.flat, 0);
      for (size_t pos = 0; pos < b.params.size(); ++pos) params_[b.params[pos]].copy_(b.views[pos]);
    }
    // The gradients are the buckets' views from now on: backward
    // accumulates into them in place.
    for (auto& b : buckets_) {
      b.flat.zero_();
      for (size_t pos = 0; pos < b.params.size(); ++pos) params_[b.params[pos]].mutable_grad() = b.views[pos];
    }
  }
  // A wrapped CPU number, as DDP's reducer divides with, made once: a device
  // tensor per parameter would be an allocation and a fill kernel each.
  inv_world_ = at::native::wrapped_scalar_tensor(1.0 / ctx.world_size);
  ready_.assign(params_.size(), 0);
  install_grad_ready_hooks(params_, [this](size_t k) { on_grad_ready(k); });

  auto t = replica_topology(ctx);
  t.options = fmt::format("{},buckets={}", choice_.options_text(), buckets_.size());
  t.state_theory_bytes = replicated_state_bytes(numel, masters_ != nullptr);
  // The buckets are counted with the parameters, gradients and Adam's states
  // (the gradients are their views: each storage once).
  std::unique_ptr<Updater> updater = std::make_unique<ReplicatedUpdater>(model, ctx.optimizer, [this] {
    std::vector<at::Tensor> flats;
    for (auto& b : buckets_) flats.push_back(b.flat);
    return flats;
  }, masters_);
  return {std::move(t), std::move(updater)};
}

// DDP's Reducer::mark_variable_ready_dense with gradient_as_bucket_view: a
// gradient that is the bucket's view is divided in place (so that the sum is
// the mean); one that is not (the optimizer or a user set it to none) is
// copied in, divided, and replaced by the view.
void Ddp::copy_in(size_t index) {
  auto [bi, pos] = slot_[index];
  auto& view = buckets_[bi].views[pos];
  auto& p = params_[index];
  const auto& grad = p.grad();
  at::NoGradGuard no_grad;
  const bool is_view = grad.defined() && grad.is_alias_of(view);
  if (is_view) {
    if (ctx_.world_size > 1) view.mul_(inv_world_);
    return;
  }
  if (!grad.defined()) view.zero_();
  else if (ctx_.world_size == 1) view.copy_(grad);
  else at::mul_out(view, grad, inv_world_);
  p.mutable_grad() = view;
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

// Buckets start in index order only: every rank must issue the same
// collectives in the same order, whatever order its hooks fire in.
void Ddp::launch_ready() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    auto& b = buckets_[next_bucket_];
    b.work = ctx_.comm->allreduce_async(b.flat, b.what);
    ++next_bucket_;
  }
}

at::Tensor Ddp::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                 bool last_micro, train::StepTimer& timer) {
  syncing_ = last_micro && opts_.overlap;
  if (last_micro) {
    std::fill(ready_.begin(), ready_.end(), 0);
    for (auto& bk : buckets_) {
      bk.pending = bk.params.size();
      bk.work = {};
    }
    next_bucket_ = 0;
  }
  if (masters_) masters_->use_compute();
  auto loss = forward_backward_step(model, b, scale, ctx_.device.type(), ctx_.engine,
                                    timer);
  syncing_ = false;
  return loss;
}

void Ddp::finish_gradients(train::StepTimer& timer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Without overlap every gradient is divided (or copied) in now; with it,
    // only those whose hook did not fire (a parameter unused in this
    // forward) are: they take part as zeros, as with find_unused_parameters.
    for (size_t k = 0; k < params_.size(); ++k) {
      if (ready_[k]) continue;
      ready_[k] = 1;
      copy_in(k);
      --buckets_[slot_[k].first].pending;
    }
    launch_ready();
  }
  // On NCCL these waits only order the compute stream after each bucket's
  // all-reduce; the buckets stay allocated (they are the gradients), so no
  // memory a collective still uses is ever freed here.
  for (auto& b : buckets_) ctx_.comm->wait(b.work);
  timer.mark(train::Phase::GradSync);
}

namespace ddp {
std::unique_ptr<Strategy> make(const Choice& c) { return std::make_unique<Ddp>(c); }
}  // namespace ddp

}  // namespace hpcbench::strategies
