#pragma once
// The CUDA path of fused.h: autograd Functions around the kernels of
// launch.h. Only built with HPCBENCH_CUDA_KERNELS; inputs are checked
// (check.h) and in one dtype, fp32 or bf16, on one CUDA device.
#include <ATen/core/Tensor.h>

#include "kernels/embedding_layernorm.h"
#include "kernels/fused.h"
#include "kernels/master_adamw.h"

namespace hpcbench::kernels::cuda {
// Whether the kernels have code for this device: compute capability 8.0 or
// later (sm_80 code runs on 8.x, sm_90's PTX is compiled for later GPUs).
bool device_supported(const at::Tensor& t);
at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias);
MaskedOutput bias_dropout_add_layernorm(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& residual,
                                        const at::Tensor& weight, const at::Tensor& ln_bias, double p, double eps,
                                        bool training);
// embedding_layernorm.h's forward (no graph: the autograd node is the
// caller's, its backward ATen's on every device).
EmbeddingLayerNormOut embedding_layernorm(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& word_w,
                                          const at::Tensor& type_w, const at::Tensor& pos_w, const at::Tensor& ln_w,
                                          const at::Tensor& ln_b, double eps);
// master_adamw.h on CUDA (master_adamw_cuda.cpp): whether the kernels take
// `s` (bf16 or fp32, on one device, contiguous, the flats 16-byte aligned, at
// most launch::kAdamWGroups groups), and the kernels themselves.
bool master_adamw_supported(const MasterAdamW& s);
int64_t grad_norm_scratch(const MasterAdamW& s);
void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef,
               const at::Tensor& scratch);
void master_adamw(const MasterAdamW& s, const at::Tensor& coef);
}  // namespace hpcbench::kernels::cuda
