#pragma once
// The optimizer of Hugging Face's Trainer (run_qa.py): AdamW over two
// parameter groups, a linear warm-up then linear decay of the learning rate,
// and gradient clipping by global norm.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include <memory>
#include <unordered_map>
#include <string>
#include <vector>

namespace hpcbench::train {

struct OptimizerConfig {
  double lr = 5e-5;
  double weight_decay = 0.0;  // TrainingArguments' default
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// Whether the Trainer decays this parameter: not biases, not LayerNorm
// (get_decay_parameter_names' patterns, matched on the lower-cased name).
bool decays(const std::string& parameter_name);

// AdamW whose step runs ATen's fused AdamW kernel (one vectorised pass per
// parameter, as torch.optim.AdamW(fused=True)) instead of LibTorch's
// op-by-op loop: 9x faster on CPU for bert-tiny, the same update. The
// moments live in the usual AdamWParamState, so state_dict, memory
// accounting and the param groups behave as for torch::optim::AdamW.
//
// With tensor_lr() each group's rate is a tensor on the parameters' device
// that the kernel reads there (ATen's _fused_adamw_.tensor_lr), and
// load_lr() copies the groups' rates (the schedule's) into those tensors: a
// step captured in a CUDA graph then takes each step's rate instead of the
// one captured. The step counts are device tensors already.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;
  void tensor_lr();
  // Outside the captured region: each group's rate into its tensor.
  void load_lr();
  // Group `group`'s rate tensor once tensor_lr() is on and load_lr() ran;
  // undefined otherwise (the rate is the group's value).
  at::Tensor lr_tensor(size_t group) const { return tensor_lr_ && group < lr_.size() ? lr_[group] : at::Tensor(); }

 private:
  // Per-parameter step counts as float tensors, the form the kernel takes.
  std::unordered_map<c10::TensorImpl*, at::Tensor> steps_;
  std::vector<at::Tensor> lr_;  // per group, with tensor_lr()
  bool tensor_lr_ = false;
};

// FusedAdamW with group 0 = decayed parameters (weight_decay), group 1 = the
// rest (0); an empty group is left out.
std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const OptimizerConfig& cfg);
// The same two groups from tensors already split by decays() (flat shards
// that each hold parameters of one kind).
std::unique_ptr<FusedAdamW> make_adamw(std::vector<at::Tensor> decay, std::vector<at::Tensor> no_decay,
                                       const OptimizerConfig& cfg);

// get_linear_schedule_with_warmup: the lr factor rises linearly from 0 to 1
// over warmup_steps, then falls linearly to 0 at total_steps. Like LambdaLR,
// the constructor already sets the lr of step 0 (0 when there is warm-up).
class LinearSchedule {
 public:
  LinearSchedule(torch::optim::Optimizer& optimizer, double base_lr, int64_t warmup_steps, int64_t total_steps);
  // Advances one optimizer step and sets the lr of every group; returns it.
  double step();
  double lr() const { return base_lr_ * factor(step_); }
  double factor(int64_t step) const;

 private:
  void apply();
  torch::optim::Optimizer& optimizer_;
  double base_lr_;
  int64_t warmup_, total_, step_ = 0;
};

// torch.nn.utils.clip_grad_norm_(params, max_norm): scales all gradients so
// that their global L2 norm is at most max_norm; returns the norm before, as
// a tensor on the gradients' device, so that clipping never waits for the
// device (the trainer reads it after the step's one synchronisation).
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace hpcbench::train
