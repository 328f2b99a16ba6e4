#pragma once
// Megatron-LM's tensor parallelism (Shoeybi et al. 2019, "Megatron-LM", §3)
// for BertForQuestionAnswering over the T ranks of a group:
//
// - attention: query, key and value are column-parallel (each rank holds
//   a/T whole heads: rows of their weights and biases), the attention output
//   projection is row-parallel (the matching columns of its weight);
// - MLP: the first linear (intermediate.dense) is column-parallel, the second
//   (output.dense) row-parallel, GELU applied to each rank's columns alone.
//
// Each of those two blocks starts with Megatron's f (identity forward, an
// all-reduce of the input's gradient backward) and ends with its g (an
// all-reduce of the partial outputs forward, identity backward): one
// all-reduce forward and one backward per block, of [batch, seq, hidden]
// elements. The row-parallel biases, LayerNorms and dropouts come after g and
// are replicated.
//
// The embeddings and the QA head are replicated, not vocabulary-parallel:
// BERT's word embedding table is a lookup (no output layer tied to it, as a
// language model has) and the QA head is a hidden x 2 matrix, so splitting
// either would cost collectives and save little memory; every rank computes
// them whole, with the same weights and the same gradients (the input
// gradient of the first layer is all-reduced by its f).
//
// Every parameter keeps its name in the whole model; split ones hold their
// slice (load_tensor_parallel cuts it from the whole model's tensors,
// full_state gathers them back).
//
// Under the fused engine (--fused) the layers are the fused model's: one
// packed QKV projection per rank, holding that rank's heads of query, then
// of key, then of value (the whole model's [3h, h] cut per third, not in T
// consecutive row blocks, which would give rank 0 all of query and part of
// key), and the fused bias-GELU and bias-dropout-residual-LayerNorm kernels;
// the row-parallel bias still follows g's all-reduce, as the fused kernel
// takes the GEMM's output and its bias apart.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <map>
#include <memory>
#include <string>

#include "core/engine_policy.h"
#include "model/bert.h"
#include "model/bert_modules.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::strategies::tensor {

// Megatron's f and g over `group` (identity when it is null or of one rank).
at::Tensor copy_to_tensor_parallel(const at::Tensor& x, dist::Comm* group);
at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, dist::Comm* group);

// Throws UserError, naming --tp-size and the model, when `config` cannot be
// split over `ranks`: heads, and the MLP's width, must divide by it.
void check_tensor_parallel(const model::BertConfig& config, int ranks);

// How a parameter is split: along dim 0 (column-parallel: rows of the
// weight, and the bias), dim 1 (row-parallel weight) or not at all (-1).
int tensor_parallel_dim(const std::string& name);
// Whether it is the fused model's packed QKV projection (split along dim 0,
// a rank's rows of each third).
bool packed_qkv(const std::string& name);

// dense (a row-parallel slice) -> g -> + bias -> dropout -> LayerNorm(x + residual).
class RowParallelResidualOutputImpl : public torch::nn::Module {
 public:
  RowParallelResidualOutputImpl(int64_t in_per_rank, const model::BertConfig& c, dist::Comm* group,
                                EnginePolicy::Kernels kernels = EnginePolicy::Kernels::Aten);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: Hugging Face's name
  torch::nn::Dropout dropout{nullptr};

 private:
  dist::Comm* group_;
  EnginePolicy::Kernels kernels_;
};
TORCH_MODULE(RowParallelResidualOutput);

class TensorParallelAttentionImpl : public torch::nn::Module {
 public:
  TensorParallelAttentionImpl(const model::BertConfig& c, dist::Comm* group, int ranks, const EnginePolicy& engine);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive);

  model::BertSelfAttention self{nullptr};
  RowParallelResidualOutput output{nullptr};

 private:
  dist::Comm* group_;
};
TORCH_MODULE(TensorParallelAttention);

class TensorParallelBertLayerImpl : public torch::nn::Module {
 public:
  TensorParallelBertLayerImpl(const model::BertConfig& c, dist::Comm* group, int ranks, const EnginePolicy& engine);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive);

  TensorParallelAttention attention{nullptr};
  model::BertIntermediate intermediate{nullptr};
  RowParallelResidualOutput output{nullptr};

 private:
  dist::Comm* group_;
};
TORCH_MODULE(TensorParallelBertLayer);

class TensorParallelBertForQuestionAnsweringImpl : public torch::nn::Module {
 public:
  // `group`: the tensor-parallel ranks (null: one rank, the whole model).
  // Random weights drawn as the whole model draws them, then cut: seed torch
  // first and every rank holds the slices of one and the same model.
  // `engine`: its QKV layout and kernels, as the whole model's (the
  // precision and the weights' residency are the strategy's to apply).
  TensorParallelBertForQuestionAnsweringImpl(const model::BertConfig& config, std::shared_ptr<dist::Comm> group,
                                             const EnginePolicy& engine = {});

  model::QAOutput forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids, const at::Tensor& attention_mask,
                   const std::optional<at::Tensor>& start_positions = std::nullopt,
                   const std::optional<at::Tensor>& end_positions = std::nullopt);

  const model::BertConfig& config() const { return config_; }
  const EnginePolicy& engine() const { return engine_; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  dist::Comm* group() const { return group_.get(); }
  void set_activation_checkpointing(bool on) { recompute_ = on; }

  model::BertEmbeddings embeddings{nullptr};
  torch::nn::ModuleList layer{nullptr};
  torch::nn::Linear qa_outputs{nullptr};

 private:
  model::BertConfig config_;
  EnginePolicy engine_;
  std::shared_ptr<dist::Comm> group_;
  int ranks_ = 1, rank_ = 0;
  bool recompute_ = false;
};
TORCH_MODULE(TensorParallelBertForQuestionAnswering);

// A module's parameters under their names (the whole model's state dict).
std::map<std::string, at::Tensor> named_tensors(const torch::nn::Module& module);

// Copies this rank's slice of every parameter from the whole model's
// tensors, by name. Throws UserError naming a missing tensor or a shape that
// does not split.
void load_tensor_parallel(TensorParallelBertForQuestionAnsweringImpl& model,
                          const std::map<std::string, at::Tensor>& whole);

// Every parameter (or, with `gradients`, its gradient) whole, gathered from
// the group's slices: a collective over the group (every member calls it),
// for checkpoints, evaluation and the tests.
std::map<std::string, at::Tensor> full_state(TensorParallelBertForQuestionAnsweringImpl& model,
                                             bool gradients = false);

}  // namespace hpcbench::strategies::tensor
