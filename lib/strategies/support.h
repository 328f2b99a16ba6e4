#pragma once
// What several strategies need from the same place: one micro-batch's
// forward and backward under autocast, gradient-ready hooks (ddp's buckets
// and the sharded engine's units start their reduction when the last
// gradient of a group has been accumulated) and the check that every rank
// holds the same model before collectives pair tensors up by position.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

#include <functional>
#include <string>
#include <vector>

#include "model/bert.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/step_timer.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::strategies {

// Forward under the autocast `engine` asks for (EnginePolicy::autocast:
// bf16/fp16 unless the weights are resident, nothing otherwise), then
// backward of `scale` x the loss, the two phases marked on `timer`; returns
// the unscaled loss, detached (nothing waits for it). `Model`: any module
// holder whose forward is BertForQuestionAnswering's (the tensor-parallel one).
template <typename Model>
at::Tensor forward_backward_of(Model& model, const train::Batch& b, double scale, c10::DeviceType device,
                               const EnginePolicy& engine, train::StepTimer& timer) {
  model::QAOutput out;
  {
    train::AutocastGuard autocast(device, engine.autocast());
    out = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
  }
  timer.mark(train::Phase::Forward);
  (out.loss * scale).backward();
  timer.mark(train::Phase::Backward);
  return out.loss.detach();
}
at::Tensor forward_backward_step(model::BertForQuestionAnswering& model, const train::Batch& batch, double scale,
                                 c10::DeviceType device, const EnginePolicy& engine, train::StepTimer& timer);

// Calls ready(k) after backward has accumulated params[k]'s gradient (a
// post-accumulate-grad hook, which may run on autograd's device threads).
void install_grad_ready_hooks(const std::vector<at::Tensor>& params, std::function<void(size_t)> ready);
void clear_grad_hooks(const std::vector<at::Tensor>& params);

// Fails on every rank, naming the odd one, when the ranks' `identity` of
// their model (tensor counts, sizes) differ.
void check_same_model(dist::Comm& comm, const std::string& strategy, const std::string& identity);

// Averages `params`' gradients over `comm` in one flat all-reduce (a
// parameter without a gradient contributes zeros and receives the mean).
// For the data-parallel dimension of a pipeline or tensor-parallel layout,
// whose ranks each hold a part of the model that ddp's buckets, hooked on the
// whole model, do not cover.
void allreduce_gradients(const std::vector<at::Tensor>& params, dist::Comm& comm, const std::string& what);

}  // namespace hpcbench::strategies
