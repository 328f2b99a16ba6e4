#pragma once
#include <vector>

#include "strategies/dp/options.h"
#include "strategies/strategy.h"

namespace hpcbench::strategies {

// PyTorch's DataParallel: one process drives several devices. Each forward
// replicates the model from the first device, scatters the batch's rows,
// runs forward and backward of the replicas in parallel threads and sums
// their gradients onto the first device, whose model the optimizer updates.
// On CPU the replicas share the CPU (--dp-replicas), which measures the
// method's overheads rather than a speedup.
class Dp final : public Strategy {
 public:
  explicit Dp(const Choice& choice) : choice_(choice) {}
  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                              double scale, bool last_micro, train::StepTimer& timer) override;

 private:
  // The devices and the replicas on them.
  void place(model::BertForQuestionAnswering& model, const StrategyContext& ctx);

  Choice choice_;
  StrategyContext ctx_;
  std::vector<c10::Device> devices_;                       // devices_[0] holds the model itself
  std::vector<model::BertForQuestionAnswering> replicas_;  // for devices_[1..]
  std::vector<at::Tensor> params_;                         // the model's, in order
  std::vector<std::vector<at::Tensor>> replica_params_;
};

}  // namespace hpcbench::strategies
