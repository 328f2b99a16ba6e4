#pragma once
// BertForQuestionAnswering cut into P pipeline stages: consecutive encoder
// layers per stage, the embeddings on the first, the QA head on the last (its
// loss is computed from the logits there, model::qa_output). A stage holds
// the whole model's own modules (shared, not copied) under their Hugging Face
// names, so its parameters are the same tensors, named as in a checkpoint;
// under --fused they are the fused model's (packed QKV, the fused kernels).
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <vector>

#include "model/bert.h"
#include "model/bert_modules.h"

namespace hpcbench::strategies::pipeline {

class PipelineStageImpl : public torch::nn::Module {
 public:
  // Stage `stage` of counts.size() stages of `whole` (counts from
  // stage_layer_counts (cut.h), which checks them).
  PipelineStageImpl(model::BertForQuestionAnsweringImpl& whole, int stage, const std::vector<int64_t>& counts);

  // `input`: the input ids on the first stage, the previous stage's hidden
  // states [batch, seq, hidden] on the others. Returns this stage's hidden
  // states, or on the last stage the QA logits [batch, seq, 2].
  at::Tensor forward(const at::Tensor& input, const at::Tensor& token_type_ids, const at::Tensor& attention_mask);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ + 1 == stages_; }
  int64_t first_layer() const { return first_layer_; }
  int64_t layers() const { return static_cast<int64_t>(layers_.size()); }
  const model::BertConfig& config() const { return config_; }
  void set_activation_checkpointing(bool on) { recompute_ = on; }

 private:
  model::BertConfig config_;
  int stage_ = 0, stages_ = 1;
  int64_t first_layer_ = 0;
  model::BertEmbeddings embeddings_{nullptr};
  std::vector<model::BertLayer> layers_;
  torch::nn::Linear qa_outputs_{nullptr};
  bool recompute_ = false;
  EnginePolicy engine_;  // the whole model's, whose modules this stage runs
};
TORCH_MODULE(PipelineStage);

}  // namespace hpcbench::strategies::pipeline
