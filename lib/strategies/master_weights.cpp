#include "strategies/master_weights.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/master_adamw.h"
#include "distributed/process_group.h"
#include "train/optimizer.h"

namespace hpcbench::strategies {

namespace {

c10::ScalarType dtype_of(const std::string& precision) {
  if (precision == "bf16") return c10::kBFloat16;
  if (precision == "fp16") return c10::kHalf;
  return c10::kFloat;
}

// A tensor sharing `flat`'s memory at `offset` shaped as `like`, without
// being an autograd view: the optimizer's zero_grad detaches gradients in
// place, which views refuse (as ddp's bucket views).
at::Tensor slot_of(const at::Tensor& flat, int64_t offset, const at::Tensor& like) {
  auto v = at::empty({0}, flat.options());
  v.set_(flat.storage(), flat.storage_offset() + offset, like.sizes(), like.strides());
  return v;
}

}  // namespace

c10::ScalarType weight_dtype(const EnginePolicy& engine, bool gathered) {
  if (gathered || engine.resident()) return dtype_of(engine.precision);
  return c10::kFloat;
}

void MasterFlat::add(const at::Tensor& p) {
  params.push_back(p);
  offsets.push_back(numel);
  numel += p.numel();
}

at::Tensor MasterFlat::view_of(const at::Tensor& flat, size_t k) const {
  return flat.narrow(0, offsets[k], params[k].numel()).view(params[k].sizes());
}

void make_masters(MasterFlat& f, dist::Comm* comm, int parts, int part, c10::ScalarType compute, bool replicated) {
  at::NoGradGuard no_grad;
  const int64_t padded = (f.numel + parts - 1) / parts * parts;
  f.shard_numel = padded / parts;
  auto master = at::zeros({padded}, f.params.front().options().dtype(at::kFloat).requires_grad(false));
  for (size_t k = 0; k < f.params.size(); ++k) f.view_of(master, k).copy_(f.params[k]);
  if (comm) comm->broadcast(master, 0);
  auto slice = master.narrow(0, part * f.shard_numel, f.shard_numel);
  // The partition is a view of the replicated fp32 parameters when those
  // exist, otherwise memory of its own.
  const bool mixed = compute != c10::kFloat;
  f.shard_is_view = replicated && !mixed;
  f.shard = f.shard_is_view ? slice : slice.clone();
  if (replicated) f.full = mixed ? master.to(compute) : master;
}

at::Tensor write_back(const MasterFlat& f, int part) {
  auto mine = f.full.narrow(0, part * f.shard_numel, f.shard_numel);
  if (!f.shard_is_view) mine.copy_(f.shard.detach());
  return mine;
}

void view_compute(MasterFlat& f) { view_whole(f, f.full); }

void view_whole(MasterFlat& f, const at::Tensor& whole) {
  at::NoGradGuard no_grad;
  for (size_t k = 0; k < f.params.size(); ++k) f.params[k].set_data(f.view_of(whole, k));
}

MasterWeights::MasterWeights(torch::nn::Module& model, const EnginePolicy& engine)
    : fused_(engine.fused_master_step()) {
  const auto dtype = dtype_of(engine.precision);
  at::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.requires_grad()) flat_.add(p);
  make_masters(flat_, nullptr, 1, 0, dtype, /*replicated=*/true);
  if (!fused_) flat_grad_ = at::zeros({flat_.numel}, flat_.shard.options());
  for (size_t k = 0; k < flat_.params.size(); ++k) {
    const auto& p = flat_.params[k];
    masters_.push_back(slot_of(flat_.shard, flat_.offsets[k], p).requires_grad_(true));
    if (!fused_) grads_.push_back(slot_of(flat_grad_, flat_.offsets[k], p));
  }
  if (fused_) {
    const auto f32 = flat_.shard.options();
    exp_avg_ = at::zeros({flat_.numel}, f32);
    exp_avg_sq_ = at::zeros({flat_.numel}, f32);
    step_ = at::zeros({1}, f32);
    norm_ = at::zeros({1}, f32);
    coef_ = at::ones({1}, f32);
    scratch_ = at::zeros({std::max<int64_t>(1, kernels::grad_norm_scratch(fused_args(nullptr)))}, f32);
  }
  view_compute(flat_);
}

std::vector<at::Tensor> MasterWeights::held() const {
  // The norm's scratch (one float per 4096 parameters) is workspace, as the
  // other kernels' partial sums are, not model state.
  if (fused_) return {flat_.shard, exp_avg_, exp_avg_sq_};
  return {flat_.shard, flat_grad_};
}

// The step's arguments: this step's gradients (where autograd left them),
// the flats, and with `optimizer` its groups' hyper-parameters.
kernels::MasterAdamW MasterWeights::fused_args(const train::FusedAdamW* optimizer) const {
  kernels::MasterAdamW a;
  for (const auto& p : flat_.params) a.grads.push_back(p.grad());
  a.offsets = flat_.offsets;
  a.numel = flat_.numel;
  a.master = flat_.shard;
  a.exp_avg = exp_avg_;
  a.exp_avg_sq = exp_avg_sq_;
  a.weight = flat_.full;
  a.step = step_;
  a.groups.assign(flat_.params.size(), 0);
  a.weight_decay = {0.0};
  if (!optimizer) return a;
  const auto& groups = optimizer->param_groups();
  if (groups_.empty()) {
    // Each master's group, found by identity (adamw_of_masters put them there).
    groups_.assign(masters_.size(), -1);
    for (size_t g = 0; g < groups.size(); ++g)
      for (const auto& p : groups[g].params())
        for (size_t k = 0; k < masters_.size(); ++k)
          if (masters_[k].unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) groups_[k] = static_cast<int>(g);
    for (size_t k = 0; k < groups_.size(); ++k)
      if (groups_[k] < 0) fail("the fused master step: parameter {} is in no optimizer group (internal)", k);
  }
  a.groups = groups_;
  a.weight_decay.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(groups[g].options());
    a.weight_decay.push_back(o.weight_decay());
    a.lr.push_back(optimizer->lr_tensor(g));
    a.lr_value.push_back(o.lr());
    a.beta1 = std::get<0>(o.betas());
    a.beta2 = std::get<1>(o.betas());
    a.eps = o.eps();
  }
  return a;
}

at::Tensor MasterWeights::clip_fused(double max_norm) {
  at::NoGradGuard no_grad;
  kernels::grad_norm(fused_args(nullptr), max_norm, norm_, coef_, scratch_);
  clipped_ = true;
  return norm_.reshape({});
}

void MasterWeights::step_fused(const train::FusedAdamW& optimizer) {
  at::NoGradGuard no_grad;
  step_.add_(1);
  kernels::master_adamw(fused_args(&optimizer), clipped_ ? coef_ : at::Tensor());
  clipped_ = false;
}

at::Tensor MasterWeights::grad_squares_fused(const std::vector<bool>& keep) {
  at::NoGradGuard no_grad;
  auto a = fused_args(nullptr);
  // A gradient left out reads as zeros (kernels/master_adamw.h).
  for (size_t k = 0; k < keep.size() && k < a.grads.size(); ++k)
    if (!keep[k]) a.grads[k] = at::Tensor();
  kernels::grad_norm(a, 0.0, norm_, at::Tensor(), scratch_);
  return norm_ * norm_;
}

at::Tensor MasterWeights::clip_fused_to(const at::Tensor& total, double max_norm) {
  at::NoGradGuard no_grad;
  auto n = total.to(at::kFloat).reshape({1});
  norm_.copy_(n);
  coef_.copy_((static_cast<float>(max_norm) / (n + 1e-6f)).clamp_max(1.0f));
  clipped_ = true;
  return norm_.reshape({});
}

void MasterWeights::step(torch::optim::Optimizer& optimizer) {
  if (fused_) {
    step_fused(static_cast<const train::FusedAdamW&>(optimizer));
    return;
  }
  if (!have_grads_) gradients_in();
  optimizer.step();
  copy_out();
  have_grads_ = false;
}

void MasterWeights::zero_grad(torch::optim::Optimizer& optimizer) {
  optimizer.zero_grad(/*set_to_none=*/true);
  for (auto& p : flat_.params) p.mutable_grad() = at::Tensor();
}

const std::vector<at::Tensor>& MasterWeights::clip_gradients() {
  if (fused_) fail("the fused master step clips on the device (clip_fused), not on fp32 gradient copies (internal)");
  gradients_in();
  have_grads_ = true;
  return masters_;
}

void MasterWeights::broadcast(dist::Comm& comm) {
  comm.broadcast(flat_.shard, 0);
  copy_out();
}

void MasterWeights::gradients_in() {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> to, from;
  for (size_t k = 0; k < flat_.params.size(); ++k) {
    const auto& g = flat_.params[k].grad();
    if (g.defined()) {
      to.push_back(grads_[k]);
      from.push_back(g);
    } else {
      grads_[k].zero_();
    }
    // Set to none by the optimizer's zero_grad after each step.
    if (!masters_[k].grad().defined()) masters_[k].mutable_grad() = grads_[k];
  }
  if (!to.empty()) at::_foreach_copy_(to, from);
}

void MasterWeights::copy_out() {
  at::NoGradGuard no_grad;
  write_back(flat_, 0);
}

void MasterWeights::use_masters() {
  if (on_masters_) return;
  view_whole(flat_, flat_.shard);
  on_masters_ = true;
}

void MasterWeights::use_compute() {
  if (!on_masters_) return;
  view_compute(flat_);
  on_masters_ = false;
}

std::shared_ptr<MasterWeights> resident_weights(torch::nn::Module& model, const EnginePolicy& engine) {
  if (weight_dtype(engine, /*gathered=*/false) == c10::kFloat) return nullptr;
  return std::make_shared<MasterWeights>(model, engine);
}

}  // namespace hpcbench::strategies
