#include "strategies/support.h"

#include <torch/csrc/autograd/function_hook.h>
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
                                 c10::DeviceType device, const std::string& precision, train::StepTimer& timer) {
  return forward_backward_of(model, b, scale, device, precision, timer);
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

}  // namespace hpcbench::strategies
