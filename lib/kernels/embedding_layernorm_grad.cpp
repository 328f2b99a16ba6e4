// The embeddings' op under autograd: one node whose backward is LayerNorm's
// (from the forward's mean and rstd) and the three lookups' weight
// gradients, the same ATen calls autograd makes through the unfused module,
// so that on the composite path every gradient equals the module's bit for
// bit. The sum LayerNorm normalised is recomputed from the lookups rather
// than kept: one [batch, seq, hidden] activation less, for three gathers.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/custom_function.h>

#include <array>

#include "kernels/embedding_layernorm.h"

namespace hpcbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct EmbeddingLayerNormFn : torch::autograd::Function<EmbeddingLayerNormFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& ids, const at::Tensor& types,
                            const at::Tensor& word_w, const at::Tensor& type_w, const at::Tensor& pos_w,
                            const at::Tensor& ln_w, const at::Tensor& ln_b, double eps, int64_t padding_idx,
                            bool composite_only) {
    auto r = composite_only ? composite::embedding_layernorm(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps)
                            : embedding_layernorm(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps);
    ctx->save_for_backward({ids, types, word_w, type_w, pos_w, ln_w, ln_b, r.mean, r.rstd});
    ctx->saved_data["padding_idx"] = padding_idx;
    return r.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto s = ctx->get_saved_variables();
    const at::Tensor &ids = s[0], &types = s[1], &word_w = s[2], &type_w = s[3], &pos_w = s[4];
    const at::Tensor &ln_w = s[5], &ln_b = s[6], &mean = s[7], &rstd = s[8];
    const int64_t seq = ids.size(1), n = word_w.size(1);
    const bool any_table = ctx->needs_input_grad(2) || ctx->needs_input_grad(3) || ctx->needs_input_grad(4);
    auto positions = at::arange(seq, ids.options().dtype(at::kLong)).unsqueeze(0);
    // The composite's sum, in its order: what the kernel normalised too (it
    // rounds after each add as the composite does).
    auto e = at::embedding(word_w, ids) + at::embedding(type_w, types);
    e = e + at::embedding(pos_w, positions);
    auto [de, dln_w, dln_b] = at::native_layer_norm_backward(
        grads[0], e, {n}, mean, rstd, ln_w, ln_b, {any_table, ctx->needs_input_grad(5), ctx->needs_input_grad(6)});
    at::Tensor dword, dtype, dpos;
    if (ctx->needs_input_grad(2))
      dword = at::embedding_dense_backward(de, ids, word_w.size(0), ctx->saved_data["padding_idx"].toInt(), false);
    if (ctx->needs_input_grad(3)) dtype = at::embedding_dense_backward(de, types, type_w.size(0), -1, false);
    if (ctx->needs_input_grad(4)) {
      // The positions' lookup is [1, seq, n], broadcast over the batch:
      // autograd sums its gradient back to that shape (sum_to) before the
      // lookup's backward, and so does this.
      const std::array<int64_t, 3> shape{1, seq, n};
      dpos = at::embedding_dense_backward(at::sum_to(de, shape), positions, pos_w.size(0), -1, false);
    }
    return {at::Tensor(), at::Tensor(), dword, dtype, dpos, dln_w, dln_b, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor embedding_layernorm_autograd(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                        const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                        const at::Tensor& ln_b, double eps, int64_t padding_idx) {
  return EmbeddingLayerNormFn::apply(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps, padding_idx, false);
}

namespace composite {
at::Tensor embedding_layernorm_autograd(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                        const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                        const at::Tensor& ln_b, double eps, int64_t padding_idx) {
  return EmbeddingLayerNormFn::apply(ids, types, word_w, type_w, pos_w, ln_w, ln_b, eps, padding_idx, true);
}
}  // namespace composite

}  // namespace hpcbench::kernels
