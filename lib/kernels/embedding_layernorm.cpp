// The embeddings' op: its argument checks, its ATen composite, and the choice
// between it and the CUDA kernel (cuda_ops.cpp).
#include "kernels/embedding_layernorm.h"

#include <ATen/ATen.h>

#include "kernels/fused.h"
#if HPCBENCH_CUDA_KERNELS_BUILT
#include "kernels/cuda_ops.h"
#endif

namespace hpcbench::kernels {

void check_embedding_layernorm_args(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                    const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                    const at::Tensor& ln_b) {
  const char* fn = "embedding_layernorm";
  TORCH_CHECK(ids.defined() && ids.dim() == 2 && ids.scalar_type() == at::kLong, fn,
              ": ids must be int64 [batch, seq]");
  TORCH_CHECK(types.defined() && types.sizes() == ids.sizes() && types.scalar_type() == at::kLong, fn,
              ": types must be int64 of ids' shape ", ids.sizes());
  TORCH_CHECK(word_w.defined() && word_w.dim() == 2, fn, ": word_w must be [vocab, hidden]");
  const int64_t n = word_w.size(1);
  auto table = [&](const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.defined() && t.dim() == 2 && t.size(1) == n, fn, ": ", name, " must be [rows, ", n, "]");
  };
  table(type_w, "type_w");
  table(pos_w, "pos_w");
  TORCH_CHECK(ids.size(1) <= pos_w.size(0), fn, ": ", ids.size(1), " positions, pos_w has ", pos_w.size(0));
  for (const at::Tensor* t : {&ln_w, &ln_b})
    TORCH_CHECK(t->defined() && t->dim() == 1 && t->size(0) == n, fn, ": ln_w and ln_b must be [", n, "]");
  for (const at::Tensor* t : {&types, &word_w, &type_w, &pos_w, &ln_w, &ln_b})
    TORCH_CHECK(t->device() == ids.device(), fn, ": every operand must be on ", ids.device());
  for (const at::Tensor* t : {&type_w, &pos_w, &ln_w, &ln_b})
    TORCH_CHECK(t->scalar_type() == word_w.scalar_type(), fn, ": the weights must share word_w's dtype ",
                word_w.scalar_type());
}

namespace composite {

EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                          const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                          const at::Tensor& ln_b, double eps) {
  check_embedding_layernorm_args(ids, types, word_w, type_w, pos_w, ln_w, ln_b);
  auto positions = at::arange(ids.size(1), ids.options().dtype(at::kLong)).unsqueeze(0);
  auto e = at::embedding(word_w, ids) + at::embedding(type_w, types);
  e = e + at::embedding(pos_w, positions);
  auto [out, mean, rstd] = at::native_layer_norm(e, {word_w.size(1)}, ln_w, ln_b, eps);
  return {out, mean, rstd};
}

}  // namespace composite

EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                          const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                          const at::Tensor& ln_b, double eps) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (uses_cuda_kernels(word_w)) {
    check_embedding_layernorm_args(ids, types, word_w, type_w, pos_w, ln_w, ln_b);
    return cuda::embedding_layernorm(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps);
  }
#endif
  return composite::embedding_layernorm(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps);
}

}  // namespace hpcbench::kernels
