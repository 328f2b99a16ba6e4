// The ATen composites of the fused kernels: the semantics every path shares.
#include <ATen/ATen.h>

#include "kernels/check.h"
#include "kernels/fused.h"

namespace hpcbench::kernels {

void check_bias_gelu_args(const at::Tensor& x, const at::Tensor& bias) {
  TORCH_CHECK(x.defined() && x.dim() >= 1, "bias_gelu: x must be a tensor of at least one dimension");
  if (bias.defined()) {
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(-1), "bias_gelu: bias has shape ", bias.sizes(),
                ", expected [", x.size(-1), "] (x's last dimension)");
    TORCH_CHECK(bias.device() == x.device(), "bias_gelu: bias is on ", bias.device(), ", x on ", x.device());
  }
}

void check_layernorm_args(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                          const at::Tensor& weight, const at::Tensor& ln_bias, double p) {
  const char* fn = "bias_dropout_add_layernorm";
  TORCH_CHECK(x.defined() && x.dim() >= 1, fn, ": x must be a tensor of at least one dimension");
  TORCH_CHECK(residual.defined() && residual.sizes() == x.sizes(), fn, ": residual has shape ",
              residual.defined() ? residual.sizes() : at::IntArrayRef{}, ", expected x's ", x.sizes());
  const int64_t n = x.size(-1);
  TORCH_CHECK(residual.device() == x.device(), fn, ": residual is on ", residual.device(), ", x on ", x.device());
  auto vec = [&](const at::Tensor& t, const char* name) {
    if (!t.defined()) return;
    TORCH_CHECK(t.dim() == 1 && t.size(0) == n, fn, ": ", name, " has shape ", t.sizes(), ", expected [", n,
                "] (x's last dimension)");
    TORCH_CHECK(t.device() == x.device(), fn, ": ", name, " is on ", t.device(), ", x on ", x.device());
  };
  vec(bias, "bias");
  vec(weight, "weight");
  vec(ln_bias, "ln_bias");
  TORCH_CHECK(p >= 0.0 && p < 1.0, fn, ": dropout probability ", p, " is outside [0, 1)");
}

namespace composite {

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias) {
  check_bias_gelu_args(x, bias);
  return at::gelu(bias.defined() ? x + in_dtype_of(bias, x) : x, "none");
}

MaskedOutput bias_dropout_add_layernorm_with_mask(const at::Tensor& x, const at::Tensor& bias,
                                                  const at::Tensor& residual, const at::Tensor& weight,
                                                  const at::Tensor& ln_bias, double p, double eps, bool training,
                                                  const at::Tensor& keep_mask) {
  check_layernorm_args(x, bias, residual, weight, ln_bias, p);
  at::Tensor h = bias.defined() ? x + in_dtype_of(bias, x) : x;
  at::Tensor mask;
  if (training && p > 0) {
    // at::dropout's CPU path: noise = bernoulli_(1 - p) in the input's dtype,
    // divided by (1 - p), times the input. Drawing the mask the same way (and
    // scaling it in the input's dtype) keeps this equal to at::dropout bit for
    // bit, with the same generator state or the same mask.
    at::Tensor noise;
    if (keep_mask.defined()) {
      TORCH_CHECK(keep_mask.sizes() == x.sizes(), "bias_dropout_add_layernorm: keep_mask has shape ",
                  keep_mask.sizes(), ", expected x's ", x.sizes());
      noise = keep_mask.to(h.scalar_type());
    } else {
      noise = at::empty_like(h).bernoulli_(1 - p);
    }
    mask = noise.to(at::kBool);
    h = h * noise.div_(1 - p);
  }
  at::Tensor out = at::layer_norm(h + in_dtype_of(residual, x), {x.size(-1)}, in_dtype_of(weight, x),
                                  in_dtype_of(ln_bias, x), eps);
  return {out, mask};
}

at::Tensor bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                      const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                      bool training, const at::Tensor& keep_mask) {
  return bias_dropout_add_layernorm_with_mask(x, bias, residual, weight, ln_bias, p, eps, training, keep_mask).out;
}

}  // namespace composite
}  // namespace hpcbench::kernels
