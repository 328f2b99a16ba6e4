#pragma once
// The one small interface every parallel strategy implements. The trainer owns
// the loop, the data order, the optimizer schedule and the timing; a strategy
// decides how one micro-batch's forward/backward runs and how gradients meet.
// Adding a strategy means adding a folder here and one line in registry.cpp.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "model/bert.h"
#include "train/batch.h"
#include "train/step_timer.h"

namespace hpcbench::strategies {

struct StrategyContext {
  c10::Device device{c10::kCPU};
  int rank = 0;
  int world_size = 1;
  std::string precision = "fp32";  // autocast around forward for bf16/fp16
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual std::string options() const { return ""; }
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
  // gradients are final. Returns the ms of communication not hidden behind
  // computation (0 for strategies without any).
  virtual double finish_gradients(train::StepTimer& timer) { return 0; }
  // Total communication ms of the last step, hidden or not.
  virtual double comm_ms() const { return 0; }
};

// "baseline"; later "dp", "ddp", "fsdp", "zero". Throws UserError listing the
// known names for anything else.
std::unique_ptr<Strategy> make_strategy(const std::string& name);

}  // namespace hpcbench::strategies
