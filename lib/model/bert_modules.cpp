#include "model/bert_modules.h"

#include <ATen/record_function.h>
#include "model/activation_checkpoint.h"
#include "model/qkv_split.h"
#include "model/residual_fold.h"
#include "model/sharding_units.h"
#include "kernels/embedding_layernorm.h"
#include "kernels/fused.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>

#include <atomic>
#include <limits>

namespace hpcbench::model {

namespace {

// SDPA's choice for the last training forward (sdp::SDPBackend's values;
// -2: none yet). Asked of the dispatcher with the call's own arguments, as
// the Python reference does, so that both sides name the kernel they ran.
std::atomic<int64_t> g_sdpa_choice{-2};

torch::nn::LayerNorm layer_norm(const BertConfig& c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps));
}

// The most negative finite value of the dtype: what Hugging Face adds to the
// scores of masked keys (torch.finfo(dtype).min), so that they get exactly
// zero weight without the NaNs that -inf would give in a fully masked row.
double lowest(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case at::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case at::kDouble: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& c, EnginePolicy::Kernels kernels)
    : fused_(kernels == EnginePolicy::Kernels::Fused) {
  word_embeddings = register_module(
      "word_embeddings",
      torch::nn::Embedding(torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size).padding_idx(c.pad_token_id)));
  position_embeddings = register_module("position_embeddings",
                                        torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module("LayerNorm", layer_norm(c));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

bool BertEmbeddingsImpl::takes_fused_op() const {
  // The one op takes one dtype and no autocast (which would run LayerNorm in
  // fp32 over lower-precision lookups): otherwise the modules, as unfused.
  const auto t = word_embeddings->weight.scalar_type();
  return fused_ && !at::autocast::is_autocast_enabled(word_embeddings->weight.device().type()) &&
         token_type_embeddings->weight.scalar_type() == t && position_embeddings->weight.scalar_type() == t &&
         LayerNorm->weight.scalar_type() == t && LayerNorm->bias.scalar_type() == t;
}

at::Tensor BertEmbeddingsImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids) {
  auto types = token_type_ids.defined() ? token_type_ids : at::zeros_like(input_ids);
  if (takes_fused_op()) {
    return dropout(kernels::embedding_layernorm_autograd(
        input_ids, types, word_embeddings->weight, token_type_embeddings->weight, position_embeddings->weight,
        LayerNorm->weight, LayerNorm->bias, LayerNorm->options.eps(),
        word_embeddings->options.padding_idx().value_or(-1)));
  }
  const int64_t seq = input_ids.size(1);
  auto positions = at::arange(seq, input_ids.options().dtype(at::kLong)).unsqueeze(0);
  // Same order of additions as Hugging Face: rounding follows it bit for bit.
  auto e = word_embeddings(input_ids) + token_type_embeddings(types);
  e = e + position_embeddings(positions);
  return dropout(LayerNorm(e));
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& c, int64_t shards, EnginePolicy::Qkv layout)
    : heads_(c.num_attention_heads / shards),
      head_dim_(c.hidden_size / c.num_attention_heads),
      dropout_p_(c.attention_probs_dropout_prob) {
  const int64_t out = heads_ * head_dim_;
  if (layout == EnginePolicy::Qkv::Packed) {
    qkv = register_module("qkv", torch::nn::Linear(c.hidden_size, 3 * out));
    return;
  }
  query = register_module("query", torch::nn::Linear(c.hidden_size, out));
  key = register_module("key", torch::nn::Linear(c.hidden_size, out));
  value = register_module("value", torch::nn::Linear(c.hidden_size, out));
}

std::array<at::Tensor, 3> BertSelfAttentionImpl::split_packed(const at::Tensor& packed) const {
  // [b, s, 3, heads, d] -> three [b, heads, s, d] views of the one GEMM's
  // output: SDPA takes them strided, as Hugging Face's separate
  // projections' transposed views, so nothing is copied.
  // HPCBENCH_QKV_GRAD=packed: the same views, their gradient written
  // packed in one copy rather than autograd's two (model/qkv_split.h).
  if (qkv_packed_grad()) return split_qkv_packed_grad(packed, heads_, head_dim_);
  const int64_t b = packed.size(0), s = packed.size(1);
  auto split = packed.view({b, s, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4}).unbind(0);
  return {split[0], split[1], split[2]};
}

at::Tensor BertSelfAttentionImpl::forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive) {
  if (qkv) return attend(split_packed(linear(qkv, x)), key_mask, additive);
  const int64_t b = x.size(0), s = x.size(1);
  auto heads = [&](const at::Tensor& t) { return t.view({b, s, heads_, head_dim_}).transpose(1, 2); };
  return attend({heads(linear(query, x)), heads(linear(key, x)), heads(linear(value, x))}, key_mask, additive);
}

at::Tensor BertSelfAttentionImpl::forward_folding_residual(const at::Tensor& x, const at::Tensor& key_mask,
                                                           at::Tensor& additive, at::Tensor& residual) {
  if (!qkv) {
    residual = x;
    return forward(x, key_mask, additive);
  }
  auto folded = linear_folding_residual(x, qkv->weight, qkv->bias);
  residual = folded.residual;
  return attend(split_packed(folded.out), key_mask, additive);
}

at::Tensor BertSelfAttentionImpl::attend(const std::array<at::Tensor, 3>& qkv_heads, const at::Tensor& key_mask,
                                         at::Tensor& additive) {
  const auto& [q, k, v] = qkv_heads;
  const int64_t b = q.size(0), s = q.size(2);
  // Built once per forward in the dtype the projections come out in (the
  // autocast dtype under mixed precision), which SDPA requires of a float mask.
  if (key_mask.defined() && (!additive.defined() || additive.scalar_type() != q.scalar_type()))
    additive = at::zeros(key_mask.sizes(), q.options()).masked_fill_(key_mask.logical_not(), lowest(q.scalar_type()));
  // SDPA picks the fused (flash / memory-efficient) kernel on GPU; dropout on
  // the attention probabilities happens inside it, in training only.
  std::optional<at::Tensor> mask;
  if (key_mask.defined()) mask = additive;
  const double p = is_training() ? dropout_p_ : 0.0, scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (is_training() && g_sdpa_choice.load(std::memory_order_relaxed) == -2)
    g_sdpa_choice = at::_fused_sdp_choice(q, k, v, mask, p, false, scale);
  auto o = at::scaled_dot_product_attention(q, k, v, mask, p, false, scale);
  return o.transpose(1, 2).reshape({b, s, heads_ * head_dim_});
}

std::string sdpa_backend_used() {
  // torch/csrc/.../sdp_utils: SDPBackend {error=-1, math, flash_attention,
  // efficient_attention, cudnn_attention, overrideable}.
  switch (g_sdpa_choice.load()) {
    case -2: return "none";
    case 0: return "math";
    case 1: return "flash_attention";
    case 2: return "efficient_attention";
    case 3: return "cudnn_attention";
    case 4: return "overrideable";
    default: return "error";
  }
}

BertResidualOutputImpl::BertResidualOutputImpl(int64_t in, const BertConfig& c, EnginePolicy::Kernels kernels)
    : fused_(kernels == EnginePolicy::Kernels::Fused) {
  dense = register_module("dense", torch::nn::Linear(in, c.hidden_size));
  LayerNorm = register_module("LayerNorm", layer_norm(c));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor BertResidualOutputImpl::forward(const at::Tensor& x, const at::Tensor& residual) {
  if (fused_)
    return bias_dropout_residual_layernorm(*this, at::linear(x, dense->weight), dense, dropout, LayerNorm, residual,
                                           EnginePolicy::Kernels::Fused);
  return LayerNorm(dropout(linear(dense, x)) + residual);
}

at::Tensor bias_dropout_residual_layernorm(const torch::nn::Module& module, const at::Tensor& product,
                                           const torch::nn::Linear& dense, torch::nn::Dropout dropout,
                                           torch::nn::LayerNorm norm, const at::Tensor& residual,
                                           EnginePolicy::Kernels which) {
  // The dropout module's probability and the module's training mode, as
  // the unfused path's dropout(...) reads them.
  if (which == EnginePolicy::Kernels::Fused)
    return kernels::bias_dropout_add_layernorm(product, dense->bias, residual, norm->weight, norm->bias,
                                               dropout->options.p(), norm->options.eps(), module.is_training());
  return norm(dropout(product + dense->bias) + residual);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& c, const EnginePolicy& engine)
    : fold_(engine.folds_residual()) {
  self = register_module("self", BertSelfAttention(c, 1, engine.qkv));
  output = register_module("output", BertResidualOutput(c.hidden_size, c, engine.kernels));
}

at::Tensor BertAttentionImpl::forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive) {
  if (!fold_) return output(self->forward(x, key_mask, additive), x);
  at::Tensor residual;
  auto o = self->forward_folding_residual(x, key_mask, additive, residual);
  return output(o, residual);
}

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& c, int64_t shards, EnginePolicy::Kernels kernels)
    : tanh_gelu_(c.hidden_act != "gelu"), fused_(kernels == EnginePolicy::Kernels::Fused && !tanh_gelu_) {
  dense = register_module("dense", torch::nn::Linear(c.hidden_size, c.intermediate_size / shards));
}

at::Tensor BertIntermediateImpl::forward(const at::Tensor& x) {
  if (fused_) return kernels::bias_gelu(at::linear(x, dense->weight), dense->bias);
  return at::gelu(linear(dense, x), tanh_gelu_ ? "tanh" : "none");
}

at::Tensor BertIntermediateImpl::forward_folding_residual(const at::Tensor& x, at::Tensor& residual) {
  if (!fused_) {
    residual = x;
    return forward(x);
  }
  auto folded = linear_folding_residual(x, dense->weight, {});
  residual = folded.residual;
  return kernels::bias_gelu(folded.out, dense->bias);
}

BertLayerImpl::BertLayerImpl(const BertConfig& c, const EnginePolicy& engine) : fold_(engine.folds_residual()) {
  attention = register_module("attention", BertAttention(c, engine));
  intermediate = register_module("intermediate", BertIntermediate(c, 1, engine.kernels));
  output = register_module("output", BertResidualOutput(c.intermediate_size, c, engine.kernels));
}

at::Tensor BertLayerImpl::forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive) {
  auto a = attention(x, key_mask, additive);
  if (!fold_) return output(intermediate(a), a);
  at::Tensor residual;
  auto h = intermediate->forward_folding_residual(a, residual);
  return output(h, residual);
}

at::Tensor key_mask_of(const at::Tensor& attention_mask) {
  if (!attention_mask.defined()) return {};
  auto keep = attention_mask.ne(0);
  // An all-ones mask is dropped, as Hugging Face does, so that attention can
  // use its fused kernels. Checked on CPU only: on a device the check would
  // wait for it in every forward, so the caller decides there (train::Batch
  // sends no mask for a batch without padding).
  if (keep.is_cpu()) {
    // Named for the host-sync detector (train/op_count.h): a read only a CPU
    // run makes, of host memory.
    RECORD_USER_SCOPE("hpcbench::cpu_only_read");
    if (keep.all().item<bool>()) return {};
  }
  return keep.view({attention_mask.size(0), 1, 1, attention_mask.size(1)});
}

BertModelImpl::BertModelImpl(const BertConfig& c, const EnginePolicy& engine) {
  embeddings = register_module("embeddings", BertEmbeddings(c, engine.embedding_kernels()));
  encoder = register_module("encoder", std::make_shared<torch::nn::Module>("BertEncoder"));
  layer = encoder->register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(BertLayer(c, engine));
}

at::Tensor BertModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                                  const at::Tensor& attention_mask, UnitHooks* hooks) {
  if (hooks) hooks->before(0);
  auto h = embeddings(input_ids, token_type_ids);
  if (hooks) hooks->after(0, h);
  // [batch, 1, 1, seq]: the same key mask for every head and every query.
  auto key_mask = key_mask_of(attention_mask);
  at::Tensor additive;
  for (size_t i = 0; i < layer->size(); ++i) {
    if (hooks) hooks->before(i + 1);
    h = run_layer(layer[i]->as<BertLayer>(), h, key_mask, additive, recompute_);
    if (hooks) hooks->after(i + 1, h);
  }
  return h;
}

}  // namespace hpcbench::model
