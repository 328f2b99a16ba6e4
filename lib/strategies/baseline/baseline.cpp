#include "strategies/baseline/baseline.h"

#include "strategies/support.h"

namespace hpcbench::strategies {

SetUp Baseline::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  int64_t parameters = 0;
  for (auto& p : model->parameters()) parameters += p.numel();
  masters_ = resident_weights(*model, ctx.engine);
  auto t = replica_topology(ctx);
  t.state_theory_bytes = replicated_state_bytes(parameters, masters_ != nullptr);
  std::unique_ptr<Updater> updater = std::make_unique<ReplicatedUpdater>(model, ctx.optimizer, nullptr, masters_);
  return {std::move(t), std::move(updater)};
}

at::Tensor Baseline::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                      bool, train::StepTimer& timer) {
  if (masters_) masters_->use_compute();
  return forward_backward_step(model, b, scale, ctx_.device.type(), ctx_.engine,
                               timer);
}

namespace baseline {
std::unique_ptr<Strategy> make(const Choice&) { return std::make_unique<Baseline>(); }
}  // namespace baseline

}  // namespace hpcbench::strategies
