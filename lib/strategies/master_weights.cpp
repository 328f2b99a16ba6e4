#include "strategies/master_weights.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "distributed/process_group.h"

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

c10::ScalarType weight_dtype(const std::string& precision, const EnginePolicy& engine, bool gathered) {
  if (gathered || engine.resident()) return dtype_of(precision);
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

MasterWeights::MasterWeights(model::BertForQuestionAnswering model, c10::ScalarType dtype)
    : MasterWeights(*model, dtype) {}

MasterWeights::MasterWeights(torch::nn::Module& model, c10::ScalarType dtype) {
  at::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.requires_grad()) flat_.add(p);
  make_masters(flat_, nullptr, 1, 0, dtype, /*replicated=*/true);
  flat_grad_ = at::zeros({flat_.numel}, flat_.shard.options());
  for (size_t k = 0; k < flat_.params.size(); ++k) {
    const auto& p = flat_.params[k];
    masters_.push_back(slot_of(flat_.shard, flat_.offsets[k], p).requires_grad_(true));
    grads_.push_back(slot_of(flat_grad_, flat_.offsets[k], p));
  }
  view_compute(flat_);
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

std::shared_ptr<MasterWeights> resident_weights(model::BertForQuestionAnswering& model, const EnginePolicy& engine) {
  const auto dtype = weight_dtype(engine.precision, engine, /*gathered=*/false);
  if (dtype == c10::kFloat) return nullptr;
  return std::make_shared<MasterWeights>(model, dtype);
}

}  // namespace hpcbench::strategies
