#pragma once
// The sizes of BertForQuestionAnswering that the model-parallel memory and
// cost formulas need, without tensors (model::BertConfig has the same
// fields; model_shape() in a torch-side file converts). Parameter counts
// follow the model's own modules (lib/model), layer by layer, so that they
// match BertConfig::num_parameters and the tensors a stage or shard holds.
#include <cstdint>

namespace hpcbench::strategies {

struct ModelShape {
  int64_t vocab = 30522, hidden = 768, layers = 12, heads = 12, intermediate = 3072, positions = 512, type_vocab = 2;

  // Word, position and token-type tables and their LayerNorm.
  int64_t embedding_params() const { return (vocab + positions + type_vocab) * hidden + 2 * hidden; }
  // One encoder layer whole: Q, K, V and the attention output (weights and
  // biases), the MLP's two linears, two LayerNorms.
  int64_t layer_params() const { return layer_params_per_rank(1); }
  // One encoder layer's parameters on one of `tp` tensor-parallel ranks:
  // Q, K, V, intermediate.dense (weights and biases) and the two row-parallel
  // weights split; the row-parallel biases and the LayerNorms whole.
  int64_t layer_params_per_rank(int64_t tp) const {
    const int64_t h = hidden, i = intermediate;
    const int64_t split = 3 * (h * h + h) + h * h + (h * i + i) + i * h;
    const int64_t whole = h + h + 4 * h;  // two row-parallel biases, two LayerNorms
    return split / tp + whole;
  }
  int64_t head_params() const { return 2 * hidden + 2; }
  int64_t parameters() const { return embedding_params() + layers * layer_params() + head_params(); }
};

// Activation bytes one encoder layer keeps for backward, for a micro-batch of
// `rows` sequences of `seq` tokens, on one of `tp` tensor-parallel ranks:
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4.1) term by term, with e bytes per activation and
// one byte per dropout-mask element:
//   replicated  LayerNorm inputs 2e, QKV input e, MLP input e, two dropout masks 2
//   split / tp  Q and K 2e, V e, attention-output input e, GELU in and out 2e·i/h
//   scores / tp per head s² per sequence: softmax output e, its dropout mask 1
//               and dropout output e
// times s·b·h (the scores' term times a·s²·b). With e = 2, i = 4h and dropout
// this is the paper's s·b·h·(10 + 24/t + 5·a·s/(h·t)). Without dropout the
// masks and the dropout output are not kept; `scores` false leaves out the
// s² terms, as fused attention kernels (flash, memory-efficient) keep only
// one number per row.
double layer_activation_bytes(const ModelShape& m, int64_t rows, int64_t seq, int e, bool dropout, bool scores,
                              int64_t tp = 1);

}  // namespace hpcbench::strategies
