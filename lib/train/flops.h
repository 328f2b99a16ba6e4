#pragma once
// FLOP count of BERT training and the peak rates MFU is measured against.
#include <cstdint>
#include <string>

namespace hpcbench::model {
struct BertConfig;
}

namespace hpcbench::train {

// MFU counts the matrix multiplications a training step cannot avoid, as
// PaLM (Chowdhery et al. 2022, appendix B) and Megatron-LM do; everything
// else is either not a matmul or too small to matter, and counting it would
// make the figure depend on kernel choices rather than on the model.
//
// Per token, a Linear layer of in x out weights is in*out multiply-adds
// forward. Backward needs the input gradient (dY·W) and the weight gradient
// (Xᵀ·dY), each as large as the forward product, so training costs three
// times the forward: 2 FLOPs per multiply-add x 3 = 6 FLOPs per weight and
// token. The weights that are matmul operands in BertForQuestionAnswering
// (lib/model) are, with h = hidden_size, i = intermediate_size, L layers:
//   per layer  query, key, value, attention output  4·h²
//              intermediate, output                 2·h·i
//   QA head    qa_outputs (h -> 2 logits)           2·h
//   M = L·(4·h² + 2·h·i) + 2·h
// Left out, on purpose:
//  - the embedding tables: a lookup is a gather, not a matmul, and this
//    model has no output layer tied to them (PaLM's count includes them
//    because a language model multiplies by the tied table at the output).
//    Counting them overstated bert-base at s = 384 by 26%;
//  - there is no pooler: the QA model is built without one, as Hugging
//    Face's BertForQuestionAnswering (add_pooling_layer=False);
//  - biases, LayerNorm, GELU, softmax, dropout, the loss: element-wise work,
//    O(h) per token against O(h²), and memory-bound rather than matmul-bound.
// Attention adds two matmuls per layer whose operands are both activations,
// so they do not show up in M: scores Q·Kᵀ (s x d times d x s per head, over
// all heads s²·h multiply-adds) and their weighted sum P·V (s²·h again),
// 2·s²·h multiply-adds per layer forward -> x2 FLOPs x3 fwd+bwd = 12·h·s².
// The whole sequence is counted, padding included: the kernels compute it.
//
//   training FLOPs per sequence = 6·M·s + 12·L·h·s²
//
// bert-base at s = 384: 2.12e11 (M = 84.9M of its 108.9M parameters);
// bert-large: 7.39e11. shared/docs/reference-figures.md's 2.7e11 counts all
// 108.9M parameters, embeddings included.
int64_t matmul_weights(const model::BertConfig& config);
double training_flops_per_sequence(const model::BertConfig& config, int64_t seq);

// What the hardware computes: with activation checkpointing every encoder
// layer's forward runs twice (once more in backward), adding the layers'
// forward, a third of their training count: 2·L·(4·h² + 2·h·i)·s +
// 4·L·h·s². MFU counts the model's FLOPs (above) and stays comparable
// across runs; HFU (hardware FLOPs utilisation) counts these.
double hardware_flops_per_sequence(const model::BertConfig& config, int64_t seq, bool recompute);

// Dense (no 2:4 sparsity) peak TFLOP/s of a device for a precision ("fp32",
// "tf32", "bf16", "fp16"), looked up by the exact CUDA device name
// (cuDeviceGetName, as torch.cuda.get_device_name() prints it). 0 when the
// name is not in the table (CPUs, other GPUs, a new variant: a near-miss is
// not guessed, because a wrong peak gives a plausible but wrong MFU), or the
// device has no rate for that precision: then MFU is n/a unless
// --peak-tflops is given.
double peak_tflops(const std::string& device_name, const std::string& precision);

}  // namespace hpcbench::train
