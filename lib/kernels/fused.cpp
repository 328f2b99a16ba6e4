// Chooses, per call, between the CUDA kernels (cuda_ops.cpp) and the ATen
// composites (composite.cpp).
#include "kernels/fused.h"

#include <ATen/ATen.h>

#include "kernels/check.h"
#if HPCBENCH_CUDA_KERNELS_BUILT
#include "kernels/cuda_ops.h"
#endif

namespace hpcbench::kernels {

bool cuda_built() {
#if HPCBENCH_CUDA_KERNELS_BUILT
  return true;
#else
  return false;
#endif
}

std::string cuda_archs() {
#if HPCBENCH_CUDA_KERNELS_BUILT
  return HPCBENCH_CUDA_KERNEL_ARCHS;
#else
  return "";
#endif
}

bool uses_cuda_kernels(const at::Tensor& t) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  return t.defined() && t.is_cuda() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16) &&
         cuda::device_supported(t);
#else
  return false;
#endif
}

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (uses_cuda_kernels(x)) {
    check_bias_gelu_args(x, bias);
    return cuda::bias_gelu(x, in_dtype_of(bias, x));
  }
#endif
  return composite::bias_gelu(x, bias);
}

MaskedOutput bias_dropout_add_layernorm_with_mask(const at::Tensor& x, const at::Tensor& bias,
                                                  const at::Tensor& residual, const at::Tensor& weight,
                                                  const at::Tensor& ln_bias, double p, double eps, bool training) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (uses_cuda_kernels(x)) {
    check_layernorm_args(x, bias, residual, weight, ln_bias, p);
    return cuda::bias_dropout_add_layernorm(x, in_dtype_of(bias, x), in_dtype_of(residual, x), in_dtype_of(weight, x), in_dtype_of(ln_bias, x), p,
                                            eps, training);
  }
#endif
  return composite::bias_dropout_add_layernorm_with_mask(x, bias, residual, weight, ln_bias, p, eps, training);
}

at::Tensor bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                      const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                      bool training) {
  return bias_dropout_add_layernorm_with_mask(x, bias, residual, weight, ln_bias, p, eps, training).out;
}

}  // namespace hpcbench::kernels
