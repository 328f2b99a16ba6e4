#pragma once
// BERT's configuration, Hugging Face's BertConfig: apart from the model
// (bert.h) so that what only sizes or names a model (the command line's
// main, plan and predict) compiles without LibTorch's headers.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace hpcbench::model
