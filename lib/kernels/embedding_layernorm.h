#pragma once
// BERT's embeddings as one op (--fused): three lookups, the two adds and the
// LayerNorm, one CUDA kernel forward (one block per token), the backward in
// ATen. Dropout stays outside, as in the unfused module. Like fused.h, an
// ATen composite with the same semantics runs on the CPU, on CUDA tensors the
// kernel does not take and in a binary built without the kernels, and is the
// reference bench_kernels checks the kernel against.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace hpcbench::kernels {

// LayerNorm's output and its per-token statistics (fp32 for bf16 on CUDA,
// as ATen's own layer_norm keeps them), which the backward takes instead of
// recomputing the row sums.
struct EmbeddingLayerNormOut {
  at::Tensor out, mean, rstd;
};

// layer_norm((word_w[ids] + type_w[types]) + pos_w[position], ln_w, ln_b, eps)
// over the last dim; ids and types int64 [batch, seq], position the token's
// index in its sequence. The weights share one dtype. Forward only: no graph.
EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                          const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                          const at::Tensor& ln_b, double eps);

// The same, autograd-aware: gradients reach the five weights (none reaches
// word_w's row `padding_idx`, as torch::nn::Embedding's padding_idx; -1:
// none). Returns the output.
at::Tensor embedding_layernorm_autograd(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                        const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                        const at::Tensor& ln_b, double eps, int64_t padding_idx);

void check_embedding_layernorm_args(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                    const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                    const at::Tensor& ln_b);

namespace composite {
// The unfused module's operations in its order (the two lookups added, then
// the positions'; at::native_layer_norm, which at::layer_norm calls), so
// that it equals the module's forward bit for bit.
EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                          const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                          const at::Tensor& ln_b, double eps);
// The autograd op with this forward on every device: the reference the
// kernel's path is checked against, gradients included.
at::Tensor embedding_layernorm_autograd(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                        const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                        const at::Tensor& ln_b, double eps, int64_t padding_idx);
}  // namespace composite

}  // namespace hpcbench::kernels
