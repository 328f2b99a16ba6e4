#pragma once
// Pipeline parallelism (GPipe, 1F1B), with data parallelism across pipelines:
// the job's ranks a dp x pp grid placed as Megatron-LM places it
// (specs/mesh.h); each rank holds one stage of the model (its encoder
// layers, the embeddings on the first, the QA head and the loss on the last)
// and frees the rest. The trainer's batch for a micro-step (--batch-size
// rows per data-parallel replica) is cut into --micro-batches pieces that
// the stage runner (runner.h) pipelines; after the last micro-step the
// replicas of a stage all-reduce its gradients (one flat all-reduce after
// backward, not ddp's overlapped buckets: a stage's backward ends with the
// pipeline's drain, when there is nothing left to overlap it with), and each
// rank's optimizer steps its stage. Checkpoints and evaluation get the whole
// model by broadcasting every stage from its rank.
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "strategies/pipeline/options.h"
#include "strategies/master_weights.h"
#include "strategies/pipeline/runner.h"
#include "strategies/strategy.h"

namespace hpcbench::strategies {

class Pipeline final : public Strategy {
 public:
  explicit Pipeline(const Choice& choice);
  ~Pipeline() override;
  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch, double scale,
                              bool last_micro, train::StepTimer& timer) override;
  void finish_gradients(train::StepTimer& timer) override;
  // The last micro-step's bubble (its pipeline's fill and drain; with
  // accumulation the earlier micro-steps' are not measured).
  StepFacts step_facts() override;

 private:
  Choice choice_;
  pipeline::PipelineOptions opts_;
  StrategyContext ctx_;
  std::unique_ptr<dist::Comm> pp_owned_, dp_owned_;
  dist::Comm* pp_comm_ = nullptr;  // this rank's pipeline (the job's when there is one)
  dist::Comm* dp_comm_ = nullptr;  // this stage's replicas; null without data parallelism
  std::unique_ptr<pipeline::StageRunner> runner_;
  std::vector<at::Tensor> params_;  // the stage's
  std::shared_ptr<MasterWeights> masters_;  // --fused under bf16: the stage's fp32 masters
  bool ran_on_host_ = false;  // forward_backward ran since the last step_facts
};

}  // namespace hpcbench::strategies
