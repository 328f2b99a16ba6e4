#pragma once
// How the optimizer steps what a rank holds: the optimizer itself, clipping
// by the global norm, what follows the step, the fp16 overflow verdict, the
// whole model for checkpoints and evaluation, and the model-state bytes. A
// strategy's set-up returns one (strategy.h): replicas step the whole model
// (ReplicatedUpdater), the sharded engine its partitions (shard/updater.h).
#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <vector>

#include "model/bert.h"
#include "strategies/master_weights.h"
#include "train/optimizer.h"

namespace hpcbench::strategies {

class Updater {
 public:
  virtual ~Updater() = default;
  // The learning-rate schedule sets its groups' rate.
  virtual torch::optim::Optimizer& optimizer() = 0;
  // The tensors whose gradients the optimizer steps (fp16 loss unscaling).
  virtual std::vector<at::Tensor> params() const = 0;
  // clip_grad_norm_ over the whole model; the norm before clipping, a tensor
  // on the device (nothing waits for it).
  virtual at::Tensor clip(double max_norm) = 0;
  // fp16 loss scaling: whether every rank found its gradients finite (ranks
  // holding different shards must skip or take the step together).
  virtual bool all_finite(bool local_finite) { return local_finite; }
  // The optimizer step and what must follow it.
  virtual void step() = 0;
  // Gradients released (set to none, as Hugging Face's Trainer does) unless
  // the strategy keeps them in memory of its own.
  virtual void zero_grad() = 0;
  // Every parameter whole in the model on every rank (before a checkpoint or
  // evaluation); collective where parameters are partitioned.
  virtual void gather_whole() {}
  // Parameters + gradients + optimizer states (and whatever else of the
  // model's state the strategy holds) on this rank at its peak so far; the
  // trainer asks after the first step the optimizer took.
  virtual size_t state_bytes() const = 0;
};

// AdamW over the whole model (make_adamw's groups). `held`: tensors the
// strategy keeps besides the model's (ddp's buckets), counted with its state,
// each storage once; the model's gradients are views of them, which
// zero_grad zeroes in place instead of releasing the gradients. With `masters` (bf16-resident weights), AdamW steps
// them, clipping reads their fp32 gradients, and the step ends by copying
// them into the model's parameters (under the fused kernels one fused step
// over the flat does all three: master_weights.h); gather_whole puts them in
// the model.
// AdamW over `masters` in make_adamw's two groups, split by the names of
// `model`'s parameters they master.
std::unique_ptr<torch::optim::AdamW> adamw_of_masters(torch::nn::Module& model, const MasterWeights& masters,
                                                      const train::OptimizerConfig& cfg);

class ReplicatedUpdater final : public Updater {
 public:
  ReplicatedUpdater(model::BertForQuestionAnswering model, const train::OptimizerConfig& cfg,
                    std::function<std::vector<at::Tensor>()> held = {},
                    std::shared_ptr<MasterWeights> masters = nullptr);
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  std::vector<at::Tensor> params() const override { return params_; }
  at::Tensor clip(double max_norm) override;
  void step() override;
  void zero_grad() override;
  void gather_whole() override;
  size_t state_bytes() const override;

 private:
  model::BertForQuestionAnswering model_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::function<std::vector<at::Tensor>()> held_;
  std::shared_ptr<MasterWeights> masters_;
};

}  // namespace hpcbench::strategies
