#include "strategies/baseline/baseline.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "strategies/registry.h"
#include "train/amp.h"

namespace hpcbench::strategies {

void Baseline::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  parameters_ = 0;
  for (auto& p : model->parameters()) parameters_ += p.numel();
  if (ctx.world_size != 1)
    fail("--strategy {} runs on one device, but the job has {} ranks", reference_spec().name(), ctx.world_size);
}

at::Tensor Baseline::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b,
                                      double scale, bool, train::StepTimer& timer) {
  model::QAOutput out;
  {
    train::AutocastGuard autocast(ctx_.device.type(), ctx_.precision);
    out = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions,
                         b.end_positions);
  }
  timer.mark(train::Phase::Forward);
  (out.loss * scale).backward();
  timer.mark(train::Phase::Backward);
  return out.loss.detach();
}

double Baseline::theoretical_state_bytes() const { return replicated_state_bytes(parameters_); }

namespace baseline {
std::unique_ptr<Strategy> make(const Choice&) { return std::make_unique<Baseline>(); }
}  // namespace baseline

}  // namespace hpcbench::strategies
