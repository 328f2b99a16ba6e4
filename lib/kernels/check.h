#pragma once
// Argument checks shared by the composites and the CUDA launchers, so that
// both paths refuse the same inputs with the same message.
#include <ATen/core/Tensor.h>

namespace hpcbench::kernels {
void check_bias_gelu_args(const at::Tensor& x, const at::Tensor& bias);
void check_layernorm_args(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                          const at::Tensor& weight, const at::Tensor& ln_bias, double p);

// Every operand in x's dtype: the kernels take one dtype, and the composite
// casts the same way (rather than letting type promotion turn bf16
// activations plus an fp32 bias into an fp32 result), so both paths share one
// semantics. Parameters of another dtype (fp32 LayerNorm weights beside bf16
// activations) get their gradients back through the cast, in their own dtype.
inline at::Tensor in_dtype_of(const at::Tensor& t, const at::Tensor& x) {
  return t.defined() && t.scalar_type() != x.scalar_type() ? t.to(x.scalar_type()) : t;
}
}  // namespace hpcbench::kernels
