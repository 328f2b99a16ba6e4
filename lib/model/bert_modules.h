#pragma once
// The pieces of Hugging Face's BertModel (modeling_bert.py), one module per
// Hugging Face class and registered under the same attribute names, so that
// named_parameters() reads like a Hugging Face state_dict.
#include <ATen/core/Tensor.h>
#include <array>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "core/engine_policy.h"
#include "model/bert.h"

namespace hpcbench::model {

class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  // `kernels` Fused: the lookups, adds and LayerNorm as one op
  // (kernels/embedding_layernorm.h), dropout after it as in Hugging Face's.
  explicit BertEmbeddingsImpl(const BertConfig& c, EnginePolicy::Kernels kernels = EnginePolicy::Kernels::Aten);
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids);

  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: Hugging Face's name
  torch::nn::Dropout dropout{nullptr};

 private:
  bool takes_fused_op() const;
  bool fused_;
};
TORCH_MODULE(BertEmbeddings);

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  // With `shards` > 1, the heads of one of that many tensor-parallel ranks:
  // query, key and value project to h / shards.
  // `layout` Packed: one [3h, h] projection `qkv` (query's rows, then
  // key's, then value's: the three Hugging Face weights stacked) instead of
  // three, so that the three projections are one GEMM.
  explicit BertSelfAttentionImpl(const BertConfig& c, int64_t shards = 1,
                                 EnginePolicy::Qkv layout = EnginePolicy::Qkv::Split);
  // key_mask: [batch, 1, 1, seq] bool, true where a token may be attended to
  // (undefined: all). additive caches the additive mask across layers.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive);
  // The same, the packed QKV GEMM accumulating x's gradient into that of the
  // residual join x feeds (model/residual_fold.h): `residual` receives the x
  // to join. Split layout: forward's, `residual` is x.
  at::Tensor forward_folding_residual(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive,
                                      at::Tensor& residual);

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
  torch::nn::Linear qkv{nullptr};  // packed only (query, key and value are then null)

 private:
  std::array<at::Tensor, 3> split_packed(const at::Tensor& packed) const;
  at::Tensor attend(const std::array<at::Tensor, 3>& qkv_heads, const at::Tensor& key_mask, at::Tensor& additive);

  int64_t heads_, head_dim_;
  double dropout_p_;
};
TORCH_MODULE(BertSelfAttention);

// dense -> dropout -> LayerNorm(x + residual): BertSelfOutput and BertOutput.
// Fused kernels: the GEMM without its bias, then bias, dropout, residual add and
// LayerNorm in one kernel (kernels::bias_dropout_add_layernorm); the same
// parameters under the same names.
class BertResidualOutputImpl : public torch::nn::Module {
 public:
  BertResidualOutputImpl(int64_t in, const BertConfig& c, EnginePolicy::Kernels kernels = EnginePolicy::Kernels::Aten);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: Hugging Face's name
  torch::nn::Dropout dropout{nullptr};

 private:
  bool fused_;
};
TORCH_MODULE(BertResidualOutput);

// What follows an output projection's GEMM `product` (computed without its
// bias): + bias -> dropout -> LayerNorm(. + residual), as one fused kernel
// (kernels::bias_dropout_add_layernorm) or ATen's operations; the module's
// training mode decides dropout. A row-parallel projection (a tensor-parallel
// shard) sums its partial products before it.
at::Tensor bias_dropout_residual_layernorm(const torch::nn::Module& module, const at::Tensor& product,
                                           const torch::nn::Linear& dense, torch::nn::Dropout dropout,
                                           torch::nn::LayerNorm norm, const at::Tensor& residual,
                                           EnginePolicy::Kernels which);

class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const BertConfig& c, const EnginePolicy& engine = {});
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive);

  BertSelfAttention self{nullptr};
  BertResidualOutput output{nullptr};

 private:
  bool fold_;  // the residual's gradient folded into the QKV GEMM (EnginePolicy::folds_residual)
};
TORCH_MODULE(BertAttention);

class BertIntermediateImpl : public torch::nn::Module {
 public:
  // `shards` > 1: one tensor-parallel rank's columns (i / shards outputs).
  // Fused kernels: the GEMM without its bias, then bias + erf GELU in one
  // kernel (kernels::bias_gelu); a tanh-GELU model (gelu_new) keeps at::gelu's.
  explicit BertIntermediateImpl(const BertConfig& c, int64_t shards = 1,
                                EnginePolicy::Kernels kernels = EnginePolicy::Kernels::Aten);
  at::Tensor forward(const at::Tensor& x);
  // The same, the GEMM accumulating x's gradient into that of the residual
  // join x feeds (model/residual_fold.h); `residual` receives the x to join.
  // Unfused: forward's, `residual` is x.
  at::Tensor forward_folding_residual(const at::Tensor& x, at::Tensor& residual);

  torch::nn::Linear dense{nullptr};

 private:
  bool tanh_gelu_;
  bool fused_;
};
TORCH_MODULE(BertIntermediate);

class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& c, const EnginePolicy& engine = {});
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive);

  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertResidualOutput output{nullptr};

 private:
  bool fold_;  // the residual's gradient folded into the FFN's first GEMM
};
TORCH_MODULE(BertLayer);

// x·Wᵀ + b through at::linear, as torch.nn.Linear computes it. The C++
// frontend's Linear::forward multiplies 3-D inputs with matmul and adds the
// bias separately, which costs an extra op forward and backward per layer.
inline at::Tensor linear(const torch::nn::Linear& l, const at::Tensor& x) {
  return at::linear(x, l->weight, l->bias);
}

// The [batch, 1, 1, seq] mask of keys to attend to, from a [batch, seq]
// attention mask; undefined when no key is masked (a batch without padding),
// so that attention runs unmasked and SDPA may take its fused kernels, as
// Hugging Face drops an all-ones mask. Reads the mask (a sync on GPUs).
at::Tensor key_mask_of(const at::Tensor& attention_mask);

// The kernel scaled_dot_product_attention chose for the first training
// forward ("flash_attention", "efficient_attention", "cudnn_attention",
// "math"; "none" before any), for run.json and the GPU comparisons.
std::string sdpa_backend_used();

// BertModel without the pooler (add_pooling_layer=False, as the QA model has it).
// `engine`: its layers' QKV layout and kernels.
class BertModelImpl : public torch::nn::Module {
 public:
  explicit BertModelImpl(const BertConfig& c, const EnginePolicy& engine = {});
  // Returns the last hidden states [batch, seq, hidden].
  // `hooks` (may be null) are called around the embeddings (unit 0) and
  // each layer (unit 1 + i), as sharding_units() numbers them.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids, const at::Tensor& attention_mask,
                     UnitHooks* hooks = nullptr);
  // Each encoder layer recomputed in backward (model/activation_checkpoint.h).
  void set_activation_checkpointing(bool on) { recompute_ = on; }
  bool activation_checkpointing() const { return recompute_; }

  BertEmbeddings embeddings{nullptr};
  std::shared_ptr<torch::nn::Module> encoder;  // holds "layer", a ModuleList, as Hugging Face's BertEncoder
  torch::nn::ModuleList layer{nullptr};

 private:
  bool recompute_ = false;
};

}  // namespace hpcbench::model
