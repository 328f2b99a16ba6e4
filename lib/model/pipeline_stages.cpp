#include "model/pipeline_stages.h"

#include <ATen/ATen.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>
#include <sstream>

#include "core/error.h"
#include "model/activation_checkpoint.h"

namespace hpcbench::model {

std::vector<int64_t> stage_layer_counts(int64_t layers, int stages, const std::vector<int64_t>& given) {
  if (stages < 1) fail("--stages {}: must be at least 1", stages);
  if (!given.empty()) {
    if (static_cast<int>(given.size()) != stages)
      fail("--stage-layers {}: {} counts for {} stages (--stages); give one count per stage", fmt::join(given, ","),
           given.size(), stages);
    for (auto n : given)
      if (n < 1) fail("--stage-layers {}: every stage needs at least one encoder layer", fmt::join(given, ","));
    const int64_t sum = std::accumulate(given.begin(), given.end(), int64_t{0});
    if (sum != layers)
      fail("--stage-layers {}: the counts add up to {} but the model has {} encoder layers", fmt::join(given, ","),
           sum, layers);
    return given;
  }
  if (stages > layers)
    fail("--stages {}: the model has {} encoder layers, fewer than the stages (every stage needs at least one "
         "layer); use at most {} stages",
         stages, layers, layers);
  std::vector<int64_t> counts(size_t(stages), layers / stages);
  for (int64_t s = 0; s < layers % stages; ++s) ++counts[size_t(s)];
  return counts;
}

std::vector<int64_t> parse_stage_layers(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      fail("--stage-layers {}: \"{}\" is not a whole number (give layer counts such as 4,4,4)", text, item);
    out.push_back(n);
  }
  if (out.empty()) fail("--stage-layers: no counts given (e.g. 4,4,4)");
  return out;
}

PipelineStageImpl::PipelineStageImpl(BertForQuestionAnsweringImpl& whole, int stage, const std::vector<int64_t>& counts)
    : config_(whole.config()), stage_(stage), stages_(static_cast<int>(counts.size())) {
  if (stage < 0 || stage >= stages_) fail("internal: stage {} of {}", stage, stages_);
  auto checked = stage_layer_counts(config_.num_hidden_layers, stages_, counts);
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
  return last() ? at::linear(h, qa_outputs_->weight, qa_outputs_->bias) : h;
}

}  // namespace hpcbench::model
