#include "strategies/master_weights.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "distributed/process_group.h"

namespace hpcbench::strategies {

namespace {

// A tensor sharing `flat`'s memory at `offset` shaped as `like`, without
// being an autograd view: the optimizer's zero_grad detaches gradients in
// place, which views refuse (as ddp's bucket views).
at::Tensor slot_of(const at::Tensor& flat, int64_t offset, const at::Tensor& like) {
  auto v = at::empty({0}, flat.options());
  v.set_(flat.storage(), offset, like.sizes(), like.strides());
  return v;
}

}  // namespace

MasterWeights::MasterWeights(model::BertForQuestionAnswering model, c10::ScalarType dtype)
    : MasterWeights(*model, dtype) {}

MasterWeights::MasterWeights(torch::nn::Module& model, c10::ScalarType dtype) {
  at::NoGradGuard no_grad;
  int64_t numel = 0;
  for (auto& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    params_.push_back(p);
    numel += p.numel();
  }
  auto options = params_.front().options().dtype(at::kFloat).requires_grad(false);
  flat_ = at::empty({numel}, options);
  flat_grad_ = at::zeros({numel}, options);
  int64_t off = 0;
  for (auto& p : params_) {
    auto contiguous = p.detach().contiguous();
    masters_.push_back(slot_of(flat_, off, contiguous).requires_grad_(true));
    masters_.back().detach().copy_(contiguous);
    grads_.push_back(slot_of(flat_grad_, off, contiguous));
    off += p.numel();
    compute_.push_back(contiguous.to(dtype));
    p.set_data(compute_.back());
  }
}

void MasterWeights::broadcast(dist::Comm& comm) {
  comm.broadcast(flat_, 0);
  copy_out();
}

void MasterWeights::gradients_in() {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> to, from;
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto& g = params_[k].grad();
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
  std::vector<at::Tensor> plain;
  for (auto& m : masters_) plain.push_back(m.detach());
  at::_foreach_copy_(compute_, plain);
}

void MasterWeights::use_masters() {
  if (on_masters_) return;
  for (size_t k = 0; k < params_.size(); ++k) params_[k].set_data(masters_[k].detach());
  on_masters_ = true;
}

void MasterWeights::use_compute() {
  if (!on_masters_) return;
  for (size_t k = 0; k < params_.size(); ++k) params_[k].set_data(compute_[k]);
  on_masters_ = false;
}

std::shared_ptr<MasterWeights> resident_weights(model::BertForQuestionAnswering& model, const EnginePolicy& engine) {
  if (!engine.resident()) return nullptr;
  return std::make_shared<MasterWeights>(model, at::kBFloat16);
}

}  // namespace hpcbench::strategies
