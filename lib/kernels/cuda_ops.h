#pragma once
// The CUDA path of fused.h: autograd Functions around the kernels of
// launch.h. Only built with HPCBENCH_CUDA_KERNELS; inputs are checked
// (check.h) and in one dtype, fp32 or bf16, on one CUDA device.
#include <ATen/core/Tensor.h>

#include "kernels/fused.h"

namespace hpcbench::kernels::cuda {
// Whether the kernels have code for this device: compute capability 8.0 or
// later (sm_80 code runs on 8.x, sm_90's PTX is compiled for later GPUs).
bool device_supported(const at::Tensor& t);
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);
MaskedOutput bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                        const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                        bool training);
}  // namespace hpcbench::kernels::cuda
