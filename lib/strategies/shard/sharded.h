#pragma once
// The one engine behind `zero` (stages 1-3, as DeepSpeed defines them) and
// `fsdp` (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD): what differs between them
// is which of optimizer states, gradients and parameters are partitioned,
// when gathered parameters are freed again and over which ranks; see
// ShardingPlan (plan.h).
//
// Units (the embeddings, each encoder layer, the QA head) each hold up to two
// flat parameters (flat_param.h). Gradients are reduced unit by unit during
// backward, on every micro-step (reduction.h), so that the full gradients of
// only one unit exist at a time. The optimizer steps this rank's partition
// (updater.h); replicated parameters are then all-gathered, partitioned ones
// are gathered around each unit's forward and backward (gathers.h).
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "model/sharding_units.h"
#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

class Sharded final : public Strategy, public model::UnitHooks {
 public:
  // The run record's options text from the plan as set-up resolved it (the
  // shard group's size, the reduction dtype); the strategy's folder knows
  // which of its options they are.
  using Record = std::function<std::string(const ShardingPlan& resolved)>;
  Sharded(ShardingPlan plan, Record record);
  ~Sharded() override;
  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch, double scale,
                              bool last_micro, train::StepTimer& timer) override;
  void finish_gradients(train::StepTimer& timer) override;

  // Sizes for the memory model and its tests.
  int64_t parameters() const;
  int64_t largest_unit() const;

  // model::UnitHooks: gather a unit before its forward, free it after.
  void before(size_t unit) override;
  void after(size_t unit, const at::Tensor& output) override;

 private:
  // Called by the post-accumulate-grad hook of parameter `index`.
  void on_grad_ready(size_t index);

  ShardState s_;
  Record record_;
};

}  // namespace hpcbench::strategies::shard
