#pragma once
// The fused element-wise kernels of BERT's layers (--fused): bias + GELU, and
// bias + dropout + residual add + LayerNorm, each one CUDA kernel forward and
// one backward. Every function has an ATen composite with the same semantics
// (namespace composite): it is what runs on the CPU, on CUDA tensors of a
// dtype the kernels do not handle, in a binary built without the kernels, and
// it is the reference the numerics check (bench/bench_kernels) compares with.

#include <ATen/core/Tensor.h>

#include <string>

namespace hpcbench::kernels {

// Whether the CUDA kernels are compiled into this binary (HPCBENCH_CUDA_KERNELS).
bool cuda_built();
// The GPU architectures they were compiled for, e.g. "sm_80 sm_90"; "" when not built.
std::string cuda_archs();
// Whether `t` would take the CUDA kernels (built, a CUDA tensor of compute
// capability 8.0 or later, fp32 or bf16).
bool uses_cuda_kernels(const at::Tensor& t);

// gelu_erf(x + bias): BERT's exact erf GELU (not the tanh approximation).
// x [..., n], bias [n] (may be undefined: no bias). Autograd-aware.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);

// layer_norm(dropout(x + bias, p) + residual) * weight + ln_bias, over the
// last dim. x and residual [..., n]; bias, weight, ln_bias [n], each may be
// undefined (no bias, weight 1, ln_bias 0). Dropout only when training && p > 0,
// with at::dropout's convention (kept with probability 1 - p, scaled by
// 1 / (1 - p)). Autograd-aware.
at::Tensor bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                      const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                      bool training);

// The output and the dropout mask that produced it (bool, x's shape;
// undefined when no dropout ran), so that a check can apply the composite
// with the same mask.
struct MaskedOutput {
  at::Tensor out;
  at::Tensor keep_mask;
};
MaskedOutput bias_dropout_add_layernorm_with_mask(const at::Tensor& x, const at::Tensor& bias,
                                                  const at::Tensor& residual, const at::Tensor& weight,
                                                  const at::Tensor& ln_bias, double p, double eps, bool training);

namespace composite {
// The same semantics in plain ATen operations.
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);
// keep_mask (bool or 0/1, x's shape), when given, is the dropout mask to
// apply instead of drawing one; without it the mask is drawn exactly as
// at::dropout draws it on the CPU (a bernoulli_(1 - p) of x's dtype), so
// with the same generator state the result equals at::dropout's bit for bit.
at::Tensor bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                      const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                      bool training, const at::Tensor& keep_mask = {});
MaskedOutput bias_dropout_add_layernorm_with_mask(const at::Tensor& x, const at::Tensor& bias,
                                                  const at::Tensor& residual, const at::Tensor& weight,
                                                  const at::Tensor& ln_bias, double p, double eps, bool training,
                                                  const at::Tensor& keep_mask = {});
}  // namespace composite

}  // namespace hpcbench::kernels
