#include "model/parameter_shapes.h"

#include "model/bert.h"
#include "model/sharding_units.h"

namespace hpcbench::model {

int64_t ParameterShape::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

// The registration order of bert_modules.cpp: a module's own parameters
// (a Linear's weight then bias), then its children in the order registered.
struct Builder {
  std::vector<ParameterShape> out;
  std::string prefix;
  size_t unit = 0;
  void add(const std::string& name, std::vector<int64_t> shape) { out.push_back({prefix + name, std::move(shape), unit}); }
  void linear(const std::string& name, int64_t in, int64_t features) {
    add(name + ".weight", {features, in});
    add(name + ".bias", {features});
  }
  void layer_norm(const std::string& name, int64_t h) {
    add(name + ".weight", {h});
    add(name + ".bias", {h});
  }
};

void encoder_layer(Builder& b, const BertConfig& c, EnginePolicy::Qkv qkv) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  // heads × head_dim, as BertSelfAttention sizes its projections.
  const int64_t out = c.num_attention_heads * (h / c.num_attention_heads);
  if (qkv == EnginePolicy::Qkv::Packed) {
    b.linear("attention.self.qkv", h, 3 * out);
  } else {
    for (const char* p : {"query", "key", "value"}) b.linear(std::string("attention.self.") + p, h, out);
  }
  b.linear("attention.output.dense", h, h);
  b.layer_norm("attention.output.LayerNorm", h);
  b.linear("intermediate.dense", h, i);
  b.linear("output.dense", i, h);
  b.layer_norm("output.LayerNorm", h);
}

}  // namespace

std::vector<ParameterShape> parameter_shapes(const BertConfig& c, EnginePolicy::Qkv qkv) {
  const auto units = sharding_unit_names(c.num_hidden_layers);
  Builder b;
  const int64_t h = c.hidden_size;
  b.prefix = units.front().prefix;
  b.add("word_embeddings.weight", {c.vocab_size, h});
  b.add("position_embeddings.weight", {c.max_position_embeddings, h});
  b.add("token_type_embeddings.weight", {c.type_vocab_size, h});
  b.layer_norm("LayerNorm", h);
  for (int64_t k = 0; k < c.num_hidden_layers; ++k) {
    b.unit = static_cast<size_t>(k) + 1;
    b.prefix = units[b.unit].prefix;
    encoder_layer(b, c, qkv);
  }
  b.unit = units.size() - 1;
  b.prefix = units.back().prefix;
  // The head is one Linear: qa_outputs.weight, qa_outputs.bias.
  b.add("weight", {2, h});
  b.add("bias", {2});
  return b.out;
}

}  // namespace hpcbench::model
