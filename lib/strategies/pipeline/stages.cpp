#include "strategies/pipeline/stages.h"

#include <ATen/ATen.h>

#include <fmt/format.h>

#include <numeric>

#include "core/error.h"
#include "model/activation_checkpoint.h"

namespace hpcbench::strategies::pipeline {

// Built of the model's own modules and functions (lib/model).
using namespace hpcbench::model;

PipelineStageImpl::PipelineStageImpl(BertForQuestionAnsweringImpl& whole, int stage, const std::vector<int64_t>& counts)
    : config_(whole.config()),
      stage_(stage),
      stages_(static_cast<int>(counts.size())),
      engine_(whole.engine()) {
  if (stage < 0 || stage >= stages_) fail("internal: stage {} of {}", stage, stages_);
  // The checks that name flags are the cut's (strategies::pipeline::
  // stage_layer_counts); here only what would build a wrong stage.
  const auto& checked = counts;
  for (auto n : counts)
    if (n < 1) fail("internal: a pipeline stage of {} layers", n);
  if (std::accumulate(counts.begin(), counts.end(), int64_t{0}) != config_.num_hidden_layers)
    fail("internal: the pipeline cut does not cover the model's {} layers", config_.num_hidden_layers);
  first_layer_ = std::accumulate(checked.begin(), checked.begin() + stage, int64_t{0});
  // Registered under the whole model's names: bert.embeddings,
  // bert.encoder.layer.<i>, qa_outputs.
  auto bert = register_module("bert", std::make_shared<torch::nn::Module>("BertModel"));
  if (first()) embeddings_ = bert->register_module("embeddings", whole.bert()->embeddings);
  auto encoder = bert->register_module("encoder", std::make_shared<torch::nn::Module>("BertEncoder"));
  auto layer = encoder->register_module("layer", std::make_shared<torch::nn::Module>("ModuleList"));
  for (int64_t i = first_layer_; i < first_layer_ + checked[size_t(stage)]; ++i) {
    auto l = BertLayer(std::dynamic_pointer_cast<BertLayerImpl>(whole.bert()->layer[size_t(i)]));
    layers_.push_back(layer->register_module(std::to_string(i), l));
  }
  if (last()) qa_outputs_ = register_module("qa_outputs", whole.qa_outputs());
}

at::Tensor PipelineStageImpl::forward(const at::Tensor& input, const at::Tensor& token_type_ids,
                                      const at::Tensor& attention_mask) {
  auto h = first() ? embeddings_(input, token_type_ids) : input;
  auto key_mask = key_mask_of(attention_mask);
  at::Tensor additive;
  for (auto& l : layers_) h = run_layer(l.get(), h, key_mask, additive, recompute_);
  if (!last()) return h;
  return qa_logits(qa_outputs_, h, engine_);
}

}  // namespace hpcbench::strategies::pipeline
