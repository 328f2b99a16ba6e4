#include "train/optimizer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>

namespace hpcbench::train {

bool decays(const std::string& parameter_name) {
  std::string n = parameter_name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  // Hugging Face also matches "norm" as a whole name component and "_norm";
  // BERT has neither, only LayerNorm, but a model that did would match here.
  bool norm_part = n.find(".norm.") != std::string::npos || n.starts_with("norm.") || n.ends_with(".norm") ||
                   n.find("_norm.") != std::string::npos || n.ends_with("_norm");
  return n.find("bias") == std::string::npos && n.find("layernorm") == std::string::npos &&
         n.find("rmsnorm") == std::string::npos && !norm_part;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const OptimizerConfig& cfg) {
  std::vector<at::Tensor> decay, no_decay;
  for (auto& p : model.named_parameters(true)) {
    if (!p.value().requires_grad()) continue;
    (decays(p.key()) ? decay : no_decay).push_back(p.value());
  }
  return make_adamw(std::move(decay), std::move(no_decay), cfg);
}

std::unique_ptr<FusedAdamW> make_adamw(std::vector<at::Tensor> decay, std::vector<at::Tensor> no_decay,
                                       const OptimizerConfig& cfg) {
  auto options = [&](double wd) {
    return torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).eps(cfg.eps).weight_decay(wd);
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options(cfg.weight_decay)));
  if (!no_decay.empty()) groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
  return std::make_unique<FusedAdamW>(groups, options(cfg.weight_decay));
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (tensor_lr_ && lr_.empty()) load_lr();
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    auto& group = param_groups()[gi];
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto key = p.unsafeGetTensorImpl();
      auto& state = state_[key];
      if (!state) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        state = std::move(s);
        steps_[key] = at::zeros({}, p.options().dtype(at::kFloat));
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*state);
      s.step(s.step() + 1);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      steps.push_back(steps_[key]);
    }
    if (params.empty()) continue;
    // One operation for the group, as torch.optim.AdamW(fused=True) counts
    // its steps, instead of one add_ (and on a GPU one launch) per parameter.
    at::_foreach_add_(steps, 1);
    if (tensor_lr_)
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr_[gi],
                        std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
                        /*amsgrad=*/false, /*maximize=*/false);
    else
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, o.lr(),
                        std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
                        /*amsgrad=*/false, /*maximize=*/false);
  }
  return loss;
}

void FusedAdamW::tensor_lr() { tensor_lr_ = true; }

void FusedAdamW::load_lr() {
  if (!tensor_lr_) return;
  at::NoGradGuard no_grad;
  auto& groups = param_groups();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (lr_.size() <= gi) {
      const auto& p = groups[gi].params().front();
      // The CUDA kernel reads its rate tensor as float32 (a rate rounded to
      // float: on a GPU graphed and eager updates may differ in the last
      // bit). The CPU kernel reads its tensor through item<double>(), so a
      // double there passes the rate the double overload gets, bit for bit.
      auto dtype = p.is_cpu() ? at::kDouble : at::kFloat;
      lr_.push_back(at::empty({}, p.options().dtype(dtype).requires_grad(false)));
    }
    lr_[gi].fill_(groups[gi].options().get_lr());
  }
}

LinearSchedule::LinearSchedule(torch::optim::Optimizer& optimizer, double base_lr, int64_t warmup_steps,
                               int64_t total_steps)
    : optimizer_(optimizer), base_lr_(base_lr), warmup_(warmup_steps), total_(total_steps) {
  apply();
}

double LinearSchedule::factor(int64_t step) const {
  if (step < warmup_) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_));
  return std::max(0.0, static_cast<double>(total_ - step) / static_cast<double>(std::max<int64_t>(1, total_ - warmup_)));
}

void LinearSchedule::apply() {
  for (auto& g : optimizer_.param_groups()) g.options().set_lr(lr());
}

double LinearSchedule::step() {
  ++step_;
  apply();
  return lr();
}

// torch.nn.utils.clip_grad_norm_ with foreach=True (its default on every
// device): one _foreach_norm and one _foreach_mul_ instead of LibTorch's
// per-tensor loop, the same arithmetic.
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return at::zeros({}, at::kFloat);
  at::NoGradGuard no_grad;
  auto norms = at::_foreach_norm(grads, 2);
  auto total = at::linalg_vector_norm(at::stack(norms), 2);
  auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  at::_foreach_mul_(grads, coef);
  return total;
}

}  // namespace hpcbench::train
