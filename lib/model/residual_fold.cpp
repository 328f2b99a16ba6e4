#include "model/residual_fold.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <array>
#include <optional>
#include <utility>

namespace hpcbench::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Whether dY W can be accumulated into `dres` in place: this node holds the
// only reference to it and to its storage (the test autograd's engine makes
// before it accumulates two gradients in place), it has x's shape and the
// GEMM's dtype, and no graph of the backward is being built (create_graph).
// At dropout 0 the LayerNorm backward returns one tensor as the gradient of
// both the branch's product and the residual (fused.h); the product's GEMM
// backward, on the path by which dY reaches this node, has run and let go of
// it by then. Anyone else still holding it (a caller's grad_outputs, a hook)
// gets the out-of-place sum instead.
bool accumulates_in_place(const at::Tensor& dres, const at::Tensor& dy, at::IntArrayRef x_sizes) {
  return !torch::autograd::GradMode::is_enabled() && dres.use_count() == 1 && dres.has_storage() &&
         dres.storage().use_count() == 1 && dres.sizes() == x_sizes && dres.is_contiguous() &&
         dres.scalar_type() == dy.scalar_type() && !dres.requires_grad();
}

struct LinearFoldingResidual : torch::autograd::Function<LinearFoldingResidual> {
  // The bias optional: a Function's tensor arguments must be defined (an
  // absent optional is not an input).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias) {
    // What at::linear's own backward keeps: the input and the weight.
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = bias.has_value();
    // A view, not x itself: a Function's output must be a tensor of its own
    // to carry this node as its gradient's destination.
    return {at::linear(x, weight, bias), x.view_as(x)};
  }

  // `grads` by reference (CppNode passes its own list), so that moving the
  // residual's gradient out leaves this node its only holder.
  static variable_list backward(AutogradContext* ctx, variable_list& grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor dy = std::move(grads[0]);
    at::Tensor dres = std::move(grads[1]);
    if (!dy.defined()) return {dres, at::Tensor(), at::Tensor()};
    const int64_t k = x.size(-1), n = w.size(0);
    const at::Tensor dy2 = dy.reshape({-1, n});
    at::Tensor dx, dw, db;
    // As autograd's addmm/mm backward forms them (mm_mat2_backward for a
    // transposed weight, then its transpose; the bias summed to its shape),
    // so that they equal at::linear's bit for bit.
    if (ctx->needs_input_grad(1)) dw = dy2.t().mm(x.reshape({-1, k}));
    const std::array<int64_t, 1> bias_shape{n};
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = at::sum_to(dy2, bias_shape);
    if (ctx->needs_input_grad(0)) {
      if (!dres.defined()) {
        dx = dy2.mm(w).view(x.sizes());
      } else if (accumulates_in_place(dres, dy2, x.sizes())) {
        dres.view({-1, k}).addmm_(dy2, w);  // beta = 1: the fold
        dx = dres;
      } else {
        dx = dres + dy2.mm(w).view(x.sizes());
      }
    }
    return {dx, dw, db};
  }
};

}  // namespace

FoldedLinear linear_folding_residual(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  const bool applies = torch::autograd::GradMode::is_enabled() && x.requires_grad() &&
                       !at::autocast::is_autocast_enabled(x.device().type()) &&
                       weight.scalar_type() == x.scalar_type() &&
                       (!bias.defined() || bias.scalar_type() == x.scalar_type());
  if (!applies) return {at::linear(x, weight, bias), x};
  auto out = LinearFoldingResidual::apply(x, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  return {out[0], out[1]};
}

}  // namespace hpcbench::model
