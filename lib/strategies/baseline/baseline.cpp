#include "strategies/baseline/baseline.h"

#include "strategies/support.h"

namespace hpcbench::strategies {

Topology Baseline::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  int64_t parameters = 0;
  for (auto& p : model->parameters()) parameters += p.numel();
  auto t = replica_topology(ctx);
  t.state_theory_bytes = replicated_state_bytes(parameters);
  t.updater = std::make_unique<ReplicatedUpdater>(model, ctx.optimizer);
  return t;
}

at::Tensor Baseline::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                      bool, train::StepTimer& timer) {
  return forward_backward_step(model, b, scale, ctx_.device.type(), ctx_.precision, timer);
}

namespace baseline {
std::unique_ptr<Strategy> make(const Choice&) { return std::make_unique<Baseline>(); }
}  // namespace baseline

}  // namespace hpcbench::strategies
