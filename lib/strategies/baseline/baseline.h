#pragma once
#include "strategies/strategy.h"

namespace hpcbench::strategies {

// One device, no parallelism: the reference every speedup is measured against.
class Baseline final : public Strategy {
 public:
  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                              double scale, bool last_micro, train::StepTimer& timer) override;

 private:
  StrategyContext ctx_;
  std::shared_ptr<MasterWeights> masters_;  // --fused under bf16
};

}  // namespace hpcbench::strategies
