#pragma once
// bf16-resident weights with fp32 master weights (--fused under --precision
// bf16), for the strategies whose ranks hold the whole model: the model's
// parameters are bf16, so that forward and backward run without autocast
// and its per-step weight casts, and their gradients are bf16; the
// optimizer steps fp32 masters, which the gradients are copied into (one
// foreach copy) before clipping and whose update is copied back into the
// bf16 parameters after the step. The sharded strategies keep the same
// split (a compute copy and fp32 masters, shard/flat_param.h) for their
// partitions; this is the replicated model's form of it.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <string>
#include <vector>

#include "core/engine_policy.h"
#include "model/bert.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::strategies {

class MasterWeights {
 public:
  // The model's current (fp32) values become the masters; its parameters
  // are then `dtype` copies of them.
  MasterWeights(model::BertForQuestionAnswering model, c10::ScalarType dtype);
  // The same over any module's parameters: a model-parallel shard of it
  // (tensor parallelism's layers) holds its own parameters.
  MasterWeights(torch::nn::Module& model, c10::ScalarType dtype);
  // Rank 0's masters win (each rank drew its own initial weights); the
  // compute copies follow.
  void broadcast(dist::Comm& comm);
  // The fp32 tensors the optimizer steps, in the model's parameter order.
  const std::vector<at::Tensor>& masters() const { return masters_; }
  // The masters' gradients from the parameters' (fp32, in memory of their
  // own; a parameter without a gradient gives zeros).
  void gradients_in();
  // The masters' values into the compute copies, after a step.
  void copy_out();
  // The model's parameters the masters themselves (a checkpoint or an
  // evaluation reads the fp32 weights), until use_compute().
  void use_masters();
  // The model's parameters the compute copies again (before a forward);
  // nothing when they are.
  void use_compute();
  // The memory held besides the model's parameters and the optimizer's
  // states: the masters and their gradients.
  std::vector<at::Tensor> held() const { return {flat_, flat_grad_}; }

 private:
  std::vector<at::Tensor> params_;    // the model's parameters (autograd leaves)
  std::vector<at::Tensor> compute_;   // their compute-dtype data
  std::vector<at::Tensor> masters_;   // views of flat_
  std::vector<at::Tensor> grads_;     // views of flat_grad_
  at::Tensor flat_, flat_grad_;       // fp32, every parameter end to end
  bool on_masters_ = false;
};

// The masters the run's engine asks for: weights resident in bf16; null
// otherwise (the model stays fp32, under autocast where mixed). Forward then
// runs under engine.autocast().
std::shared_ptr<MasterWeights> resident_weights(model::BertForQuestionAnswering& model, const EnginePolicy& engine);

}  // namespace hpcbench::strategies
