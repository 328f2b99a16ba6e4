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
#include "model/bert_config.h"

namespace hpcbench::model {

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

// The QA head's [batch, seq, 2] logits of `hidden`. Under the fused model
// they are made fp32 when the weights are resident in a reduced dtype:
// nothing autocasts there, and the loss is cross-entropy in fp32 as
// autocast computes it elsewhere. Every model ending in the head uses it.
at::Tensor qa_logits(const torch::nn::Linear& head, const at::Tensor& hidden, const EnginePolicy& engine);

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
