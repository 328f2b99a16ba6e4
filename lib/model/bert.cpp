#include "model/bert.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/bounded_read.h"
#include "core/error.h"
#include "model/bert_modules.h"
#include "model/sharding_units.h"

namespace hpcbench::model {

namespace {

struct Preset {
  const char* name;
  int64_t layers, hidden, heads, intermediate;
};
// Google's compact BERTs (Turc et al. 2019, google/bert_uncased_L-*_H-*_A-*)
// and the two original uncased models.
constexpr Preset kPresets[] = {
    {"bert-tiny", 2, 128, 2, 512},      {"bert-mini", 4, 256, 4, 1024},
    {"bert-small", 4, 512, 8, 2048},    {"bert-medium", 8, 512, 8, 2048},
    {"bert-base-uncased", 12, 768, 12, 3072}, {"bert-large-uncased", 24, 1024, 16, 4096},
};

void validate(const BertConfig& c, const std::string& where) {
  auto positive = [&](int64_t v, const char* key) {
    if (v <= 0) fail("{}: {} must be positive, got {}", where, key, v);
  };
  positive(c.vocab_size, "vocab_size");
  positive(c.hidden_size, "hidden_size");
  positive(c.num_hidden_layers, "num_hidden_layers");
  positive(c.num_attention_heads, "num_attention_heads");
  positive(c.intermediate_size, "intermediate_size");
  positive(c.max_position_embeddings, "max_position_embeddings");
  positive(c.type_vocab_size, "type_vocab_size");
  if (c.hidden_size % c.num_attention_heads != 0)
    fail("{}: hidden_size {} is not a multiple of num_attention_heads {}", where, c.hidden_size,
         c.num_attention_heads);
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh")
    fail("{}: hidden_act \"{}\" is not supported (gelu, gelu_new, gelu_pytorch_tanh)", where, c.hidden_act);
  if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size)
    fail("{}: pad_token_id {} is outside the vocabulary of {}", where, c.pad_token_id, c.vocab_size);
  for (double p : {c.hidden_dropout_prob, c.attention_probs_dropout_prob})
    if (p < 0 || p >= 1) fail("{}: dropout probability {} is outside [0, 1)", where, p);
}

}  // namespace

std::vector<std::string> BertConfig::preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

BertConfig BertConfig::preset(const std::string& name) {
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    BertConfig c;
    c.num_hidden_layers = p.layers;
    c.hidden_size = p.hidden;
    c.num_attention_heads = p.heads;
    c.intermediate_size = p.intermediate;
    c.name = p.name;
    return c;
  }
  fail("unknown model \"{}\": known presets are {} (or give a Hugging Face config.json)", name,
       fmt::join(preset_names(), ", "));
}

BertConfig BertConfig::from_json(const std::filesystem::path& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path, file_limit::kConfig));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path.string(), e.what());
  }
  if (!j.is_object()) fail("{}: expected a JSON object (a Hugging Face config.json)", path.string());
  if (j.contains("model_type") && j["model_type"] != "bert")
    fail("{}: model_type is {}, only \"bert\" is supported", path.string(), j["model_type"].dump());
  if (j.contains("position_embedding_type") && j["position_embedding_type"] != "absolute")
    fail("{}: position_embedding_type {} is not supported (only \"absolute\")", path.string(),
         j["position_embedding_type"].dump());
  BertConfig c;  // Hugging Face's BertConfig defaults are bert-base's, as ours
  auto get = [&](const char* key, auto& field) {
    if (!j.contains(key) || j[key].is_null()) return;
    try {
      j[key].get_to(field);
    } catch (const nlohmann::json::exception&) {
      fail("{}: field \"{}\" has the wrong type: {}", path.string(), key, j[key].dump());
    }
  };
  get("vocab_size", c.vocab_size);
  get("hidden_size", c.hidden_size);
  get("num_hidden_layers", c.num_hidden_layers);
  get("num_attention_heads", c.num_attention_heads);
  get("intermediate_size", c.intermediate_size);
  get("max_position_embeddings", c.max_position_embeddings);
  get("type_vocab_size", c.type_vocab_size);
  get("hidden_dropout_prob", c.hidden_dropout_prob);
  get("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  get("layer_norm_eps", c.layer_norm_eps);
  get("initializer_range", c.initializer_range);
  get("pad_token_id", c.pad_token_id);
  get("hidden_act", c.hidden_act);
  auto dir = path.parent_path().filename().string();
  c.name = dir.empty() ? path.stem().string() : dir;
  // In a Hugging Face cache the folder is a commit; the model is named two up
  // (models--org--name/snapshots/<commit>/config.json).
  auto repo = path.parent_path().parent_path().parent_path().filename().string();
  if (path.parent_path().parent_path().filename() == "snapshots" && repo.starts_with("models--")) {
    c.name = repo.substr(8);
    for (size_t at; (at = c.name.find("--")) != std::string::npos;) c.name.replace(at, 2, "/");
  }
  validate(c, path.string());
  return c;
}

std::string BertConfig::to_json() const {
  nlohmann::ordered_json j;
  j["architectures"] = {"BertForQuestionAnswering"};
  j["model_type"] = "bert";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["layer_norm_eps"] = layer_norm_eps;
  j["initializer_range"] = initializer_range;
  j["pad_token_id"] = pad_token_id;
  j["hidden_act"] = hidden_act;
  j["position_embedding_type"] = "absolute";
  return j.dump(2) + "\n";
}

std::vector<int64_t> BertConfig::unit_parameters() const {
  const int64_t h = hidden_size, i = intermediate_size;
  const int64_t embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h;
  const int64_t attention = 4 * (h * h + h) + 2 * h;
  const int64_t ffn = (h * i + i) + (i * h + h) + 2 * h;
  const int64_t qa = 2 * h + 2;
  std::vector<int64_t> units{embeddings};
  units.insert(units.end(), static_cast<size_t>(num_hidden_layers), attention + ffn);
  units.push_back(qa);
  return units;
}

int64_t BertConfig::num_parameters() const {
  int64_t n = 0;
  for (int64_t u : unit_parameters()) n += u;
  return n;
}

void hf_init_weights(torch::nn::Module& root, double std) {
  torch::NoGradGuard no_grad;
  root.apply([std](torch::nn::Module& m) {
    if (auto* lin = m.as<torch::nn::Linear>()) {
      lin->weight.normal_(0.0, std);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* emb = m.as<torch::nn::Embedding>()) {
      emb->weight.normal_(0.0, std);
      if (auto pad = emb->options.padding_idx()) emb->weight[*pad].zero_();
    } else if (auto* ln = m.as<torch::nn::LayerNorm>()) {
      if (ln->weight.defined()) ln->weight.fill_(1.0);
      if (ln->bias.defined()) ln->bias.zero_();
    }
  });
}

BertForQuestionAnsweringImpl::BertForQuestionAnsweringImpl(const BertConfig& config, const EnginePolicy& engine)
    : config_(config), engine_(engine) {
  validate(config_, "model " + config_.name);
  bert_ = register_module("bert", std::make_shared<BertModelImpl>(config_, engine_));
  qa_outputs_ = register_module("qa_outputs", torch::nn::Linear(config_.hidden_size, 2));
  hf_init_weights(*this, config_.initializer_range);
}

void BertForQuestionAnsweringImpl::init_qa_head() { hf_init_weights(*qa_outputs_, config_.initializer_range); }

QAOutput BertForQuestionAnsweringImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                                               const at::Tensor& attention_mask,
                                               const std::optional<at::Tensor>& start_positions,
                                               const std::optional<at::Tensor>& end_positions) {
  const int64_t seq = input_ids.size(1);
  if (seq > config_.max_position_embeddings)
    fail("sequence length {} exceeds the model's {} positions", seq, config_.max_position_embeddings);
  auto hidden = bert_->forward(input_ids, token_type_ids, attention_mask, hooks_);
  const size_t head = static_cast<size_t>(config_.num_hidden_layers) + 1;
  if (hooks_) hooks_->before(head);
  auto logits = qa_logits(qa_outputs_, hidden, engine_);
  if (hooks_) hooks_->after(head, logits);
  return qa_output(logits, start_positions, end_positions);
}

at::Tensor qa_logits(const torch::nn::Linear& head, const at::Tensor& hidden, const EnginePolicy& engine) {
  auto logits = linear(head, hidden);
  if (engine.fused_model() && at::isReducedFloatingType(logits.scalar_type())) logits = logits.to(at::kFloat);
  return logits;
}

QAOutput qa_output(const at::Tensor& logits, const std::optional<at::Tensor>& start_positions,
                   const std::optional<at::Tensor>& end_positions) {
  const int64_t seq = logits.size(1);
  QAOutput out;
  out.start_logits = logits.select(-1, 0).contiguous();
  out.end_logits = logits.select(-1, 1).contiguous();
  if (start_positions && end_positions && start_positions->defined() && end_positions->defined()) {
    // Positions outside the sequence (answers cut off by truncation) are
    // clamped to `seq` and that index is ignored, as Hugging Face does.
    auto prep = [seq](const at::Tensor& p) { return (p.dim() > 1 ? p.squeeze(-1) : p).to(at::kLong).clamp(0, seq); };
    auto ce = [seq](const at::Tensor& logits, const at::Tensor& target) {
      return at::cross_entropy_loss(logits, target, {}, at::Reduction::Mean, seq);
    };
    out.loss = (ce(out.start_logits, prep(*start_positions)) + ce(out.end_logits, prep(*end_positions))) / 2;
  }
  return out;
}

}  // namespace hpcbench::model
