#pragma once
// BertForQuestionAnswering as Hugging Face defines it. Module names mirror
// Hugging Face's parameter names (bert.encoder.layer.0.attention.self.query.weight,
// qa_outputs.bias, ...) so that checkpoints load by name.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/engine_policy.h"

namespace hpcbench::model {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  double layer_norm_eps = 1e-12;
  double initializer_range = 0.02;
  int64_t pad_token_id = 0;          // its word-embedding row starts at zero and gets no gradient
  std::string hidden_act = "gelu";   // "gelu" (erf) or "gelu_new" / "gelu_pytorch_tanh" (tanh approximation)
  std::string name = "custom";

  // A Hugging Face config.json; throws UserError naming the file/field.
  static BertConfig from_json(const std::filesystem::path& path);
  // bert-tiny, bert-mini, bert-small, bert-medium, bert-base-uncased,
  // bert-large-uncased; throws UserError listing the known names.
  static BertConfig preset(const std::string& name);
  // Trainable parameters of BertForQuestionAnswering with this configuration.
  int64_t num_parameters() const;
  // The same, per sharding unit in forward order (model/sharding_units.h):
  // the embeddings, each encoder layer, the QA head.
  std::vector<int64_t> unit_parameters() const;
  // The Hugging Face config.json text of this configuration (BertConfig keys),
  // so that a saved checkpoint folder loads with from_pretrained.
  std::string to_json() const;
  // All preset names, in size order.
  static std::vector<std::string> preset_names();
};

struct QAOutput {
  at::Tensor start_logits;  // [batch, seq]
  at::Tensor end_logits;    // [batch, seq]
  at::Tensor loss;          // scalar; undefined when no positions are given
};

// The start and end logits of a [batch, seq, 2] QA head output and, with
// positions, the loss: the mean of the two cross-entropies, positions clamped
// to [0, seq] and seq ignored, as Hugging Face computes it. Shared by every
// model that ends in the QA head (whole, pipeline's last stage, tensor-parallel).
QAOutput qa_output(const at::Tensor& logits, const std::optional<at::Tensor>& start_positions,
                   const std::optional<at::Tensor>& end_positions);

class BertModelImpl;  // embeddings + encoder, defined in bert_modules.h
class UnitHooks;      // sharding_units.h

// Hugging Face's _init_weights on `root` and every module below it: normal(0,
// std) weights of Linear and Embedding (an embedding's padding row zeroed),
// zero biases, unit LayerNorm; drawn from torch's global generator.
void hf_init_weights(torch::nn::Module& root, double std);

class BertForQuestionAnsweringImpl : public torch::nn::Module {
 public:
  // Random initialisation as Hugging Face's _init_weights (normal(0,
  // initializer_range) weights, zero biases, unit LayerNorm), drawn from
  // torch's global generator: seed it with torch::manual_seed first.
  // `engine`'s packed QKV and fused kernels (--fused): query, key and value
  // as one projection and the fused bias-GELU and
  // bias-dropout-residual-LayerNorm kernels (bert_modules.h);
  // the same random weights as the unfused model from the same seed (the
  // stacked projection draws query's, key's and value's numbers in turn),
  // and checkpoints in Hugging Face's names (checkpoint.h splits the
  // projection). Its loss is computed from fp32 logits whatever the weights'
  // dtype, as autocast computes cross-entropy in fp32.
  explicit BertForQuestionAnsweringImpl(const BertConfig& config, const EnginePolicy& engine = {});

  // input_ids, token_type_ids, attention_mask: [batch, seq] int64 (or int32).
  // With start/end positions the loss is the mean of the two cross-entropies,
  // positions clamped to [0, seq] and seq ignored, as Hugging Face does.
  QAOutput forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                   const at::Tensor& attention_mask,
                   const std::optional<at::Tensor>& start_positions = std::nullopt,
                   const std::optional<at::Tensor>& end_positions = std::nullopt);

  const BertConfig& config() const { return config_; }
  const EnginePolicy& engine() const { return engine_; }
  // Draws a fresh QA head (a checkpoint without one: a pre-trained encoder).
  void init_qa_head();
  // Called around each sharding unit in forward (null: none). Not owned.
  void set_unit_hooks(UnitHooks* hooks) { hooks_ = hooks; }
  const std::shared_ptr<BertModelImpl>& bert() const { return bert_; }
  const torch::nn::Linear& qa_outputs() const { return qa_outputs_; }

 private:
  UnitHooks* hooks_ = nullptr;
  BertConfig config_;
  EnginePolicy engine_;
  std::shared_ptr<BertModelImpl> bert_;
  torch::nn::Linear qa_outputs_{nullptr};
};
TORCH_MODULE(BertForQuestionAnswering);

}  // namespace hpcbench::model
