#pragma once
#include "strategies/strategy.h"

namespace hpcbench::strategies {

// One device, no parallelism: the reference every speedup is measured against.
class Baseline final : public Strategy {
 public:
  std::string options() const override { return ""; }
  void setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                              double scale, bool last_micro, train::StepTimer& timer) override;
  double theoretical_state_bytes() const override;

 private:
  StrategyContext ctx_;
  int64_t parameters_ = 0;
};

}  // namespace hpcbench::strategies
