#include "strategies/support.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>

#include "core/error.h"
#include "distributed/process_group.h"

namespace hpcbench::strategies {

namespace {
struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
  GradReadyHook(std::shared_ptr<std::function<void(size_t)>> f, size_t index) : f(std::move(f)), index(index) {}
  void operator()(const torch::autograd::Variable&) override { (*f)(index); }
  std::shared_ptr<std::function<void(size_t)>> f;
  size_t index;
};
}  // namespace

at::Tensor forward_backward_step(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                 c10::DeviceType device, const EnginePolicy& engine, train::StepTimer& timer) {
  return forward_backward_of(model, b, scale, device, engine, timer);
}

void install_grad_ready_hooks(const std::vector<at::Tensor>& params, std::function<void(size_t)> ready) {
  auto f = std::make_shared<std::function<void(size_t)>>(std::move(ready));
  for (size_t k = 0; k < params.size(); ++k)
    torch::autograd::impl::set_post_acc_grad_hooks(params[k], std::make_unique<GradReadyHook>(f, k));
}

void clear_grad_hooks(const std::vector<at::Tensor>& params) {
  for (auto& p : params) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void check_same_model(dist::Comm& comm, const std::string& strategy, const std::string& identity) {
  auto all = comm.exchange(strategy + "/model", identity);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != all[0])
      fail("{}: rank {} has a different model ({}) from rank 0 ({}): every rank must use the same --model", strategy,
           r, all[r], all[0]);
}

void allreduce_gradients(const std::vector<at::Tensor>& params, dist::Comm& comm, const std::string& what) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  flat.reserve(params.size());
  for (const auto& p : params)
    flat.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
  auto all = at::cat(flat);
  comm.allreduce(all, /*average=*/true, what);
  int64_t off = 0;
  for (auto p : params) {
    auto part = all.narrow(0, off, p.numel()).view(p.sizes());
    if (p.grad().defined()) p.mutable_grad().copy_(part);
    else p.mutable_grad() = part.clone();
    off += p.numel();
  }
}

}  // namespace hpcbench::strategies
