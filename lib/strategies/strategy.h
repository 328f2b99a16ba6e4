#pragma once
// The one small interface every parallel strategy implements. The trainer owns
// the loop, the data order, the optimizer schedule and the timing; a strategy
// decides how one micro-batch's forward/backward runs and how gradients meet.
// A strategy is a folder here (its spec, spec.h, and this class's
// implementation) and one line in registry.inc.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "model/bert.h"
#include "strategies/spec.h"
#include "train/batch.h"
#include "train/optimizer.h"
#include "train/step_timer.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::strategies {

struct StrategyContext {
  c10::Device device{c10::kCPU};
  int rank = 0;
  int world_size = 1;
  std::string precision = "fp32";  // autocast around forward for bf16/fp16
  // The job's communicator; null when the run is a single process without
  // one (baseline, dp).
  std::shared_ptr<dist::Comm> comm;
  // Each rank's node, in rank order (SLURM's node names on a cluster): fsdp
  // hybrid shards over the ranks of a node. Empty: every rank on one node.
  std::vector<std::string> hosts;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // What a run records as its strategy_options (after setup: options it
  // resolved, such as the devices or the shard group, and its facts).
  virtual std::string options() const = 0;
  // Once, before training: the model is on ctx.device with its initial
  // weights (replicas broadcast from rank 0, shards cut, ...).
  virtual void setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) = 0;
  // Forward and backward of one micro-batch (already on the device); `scale`
  // multiplies the loss before backward (accumulation and fp16 loss scaling).
  // `last_micro` is true on the micro-step that ends an accumulation, when
  // gradients must be synchronised. Returns the unscaled loss (a tensor, so
  // that nothing synchronises here).
  virtual at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                                      double scale, bool last_micro, train::StepTimer& timer) = 0;
  // After the last micro-step: wait for outstanding communication so the
  // gradients are final. Communication is timed by the step timer, which the
  // job's Comm reports to (train/step_timer.h); strategies only issue and
  // wait.
  virtual void finish_gradients(train::StepTimer& timer) {}
  // Devices this process drives (known after setup): the trainer hands
  // forward_backward batch_size x devices() rows per micro-step, so that
  // --batch-size stays per device (dp scatters the rows over its replicas).
  virtual int devices() const { return 1; }

  // The optimizer step. By default the optimizer is AdamW over the model's
  // parameters; zero and fsdp step their partitions instead, sum the
  // clipping norm over ranks and re-gather replicated parameters after the
  // step. The trainer calls these the same way for every strategy.
  virtual std::unique_ptr<torch::optim::AdamW> make_optimizer(model::BertForQuestionAnswering& model,
                                                              const train::OptimizerConfig& cfg);
  // The tensors whose gradients the optimizer steps (for loss unscaling).
  virtual std::vector<at::Tensor> optimizer_params(model::BertForQuestionAnswering& model) const;
  // clip_grad_norm_ over the whole model; returns the norm before clipping
  // (a tensor on the device: nothing waits for it).
  virtual at::Tensor clip_grad_norm(model::BertForQuestionAnswering& model, double max_norm);
  virtual void after_optimizer_step() {}
  // After the step: gradients released (set to none, as Hugging Face's
  // Trainer does) unless the strategy keeps them in memory of its own.
  virtual void zero_grad(torch::optim::Optimizer& optimizer) { optimizer.zero_grad(/*set_to_none=*/true); }
  // Every parameter whole in the model on every rank (before a checkpoint or
  // evaluation); collective for sharded strategies.
  virtual void unshard_model() {}
  // Parameters + gradients + optimizer states (and whatever else of the
  // model's state the strategy holds) on this rank at its peak so far; the
  // trainer asks after the first step the optimizer took. By default counted
  // from the tensors themselves, each storage once.
  virtual size_t model_state_bytes(model::BertForQuestionAnswering& model, const torch::optim::Optimizer& opt) const;
  // What the memory model (lib/strategies/shard/memory.h, docs/memory.md)
  // says this rank should hold at its peak.
  virtual double theoretical_state_bytes() const = 0;
  // fp16 loss scaling: whether every rank found its gradients finite (ranks
  // holding different shards must skip or take the step together).
  virtual bool all_finite(bool local_finite) { return local_finite; }
};

// The strategy `choice` names, ready for setup.
std::unique_ptr<Strategy> make_strategy(const Choice& choice);

// A strategy from elsewhere (a test's) beside the registry's own: its spec
// joins the registry (registry.h) and `make` builds it.
void add_strategy(const Spec& spec, std::unique_ptr<Strategy> (*make)(const Choice&));

}  // namespace hpcbench::strategies
