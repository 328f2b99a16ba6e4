#pragma once
// The CUDA kernels' launchers, as nvcc sees them: plain pointers, sizes and a
// stream, no ATen (so the .cu files compile fast and without LibTorch's
// flags). Tensors are contiguous, rows x n, every operand of one dtype; the
// kernels compute in fp32. Each launcher returns the launch's error.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace hpcbench::kernels::launch {

enum class DType { f32, bf16 };

// The Philox seed and offset, as at::PhiloxCudaState carries them: values
// when no graph is being captured, device pointers (read by the kernel when
// it runs, so that every replay of a graph draws a new mask) when one is.
struct Philox {
  uint64_t seed = 0;
  uint64_t offset = 0;
  const int64_t* seed_ptr = nullptr;
  const int64_t* offset_ptr = nullptr;
  uint64_t offset_intragraph = 0;
  bool captured = false;
};
// How far one call advances the generator's offset. Element e of a call uses
// Philox counter (offset / 4, e / 4) and word e % 4, as curand_init(seed,
// e / 4, offset) would: a call uses one counter value per subsequence, four
// offset units (the generator's increments must be multiples of 4).
constexpr uint64_t kPhiloxIncrement = 4;

// The bias gradients are summed over rows in two steps, the backward kernel
// writing one fp32 partial sum per block of rows and column, a small kernel
// adding the partials in a fixed order (deterministic, no atomics). The
// scratch holds `partial_blocks * outputs * n` floats.
int64_t bias_gelu_partial_blocks(int64_t rows, int64_t n);
int64_t layernorm_partial_blocks(int64_t rows, int64_t n);

// y = gelu_erf(x + bias); bias may be null.
cudaError_t bias_gelu_forward(DType t, const void* x, const void* bias, void* y, int64_t rows, int64_t n,
                              cudaStream_t stream);
// dx = dy * gelu_erf'(x + bias); dbias (null: not wanted) = sum over rows of dx.
cudaError_t bias_gelu_backward(DType t, const void* dy, const void* x, const void* bias, void* dx, void* dbias,
                               float* scratch, int64_t rows, int64_t n, cudaStream_t stream);

// z = dropout(x + bias) + residual (stored, in the dtype, for the backward);
// y = (z - mean) * rstd * weight + ln_bias, mean and rstd (fp32, per row)
// stored. keep (bool per element) is written when p > 0, else null. bias,
// weight, ln_bias may be null.
cudaError_t layernorm_forward(DType t, const void* x, const void* bias, const void* residual, const void* weight,
                              const void* ln_bias, void* y, void* z, float* mean, float* rstd, bool* keep, float p,
                              float eps, Philox philox, int64_t rows, int64_t n, cudaStream_t stream);
// From dy and what the forward stored: dresidual (the gradient of z), dx
// (dresidual * keep / (1 - p)), and the sums over rows dweight, dln_bias,
// dbias (each null when not wanted). keep null: no dropout. dx null: not
// written (without dropout it equals dresidual, which the caller returns
// for both).
cudaError_t layernorm_backward(DType t, const void* dy, const void* z, const float* mean, const float* rstd,
                               const bool* keep, float p, const void* weight, void* dx, void* dresidual,
                               void* dbias, void* dweight, void* dln_bias, float* scratch, int64_t rows, int64_t n,
                               cudaStream_t stream);

}  // namespace hpcbench::kernels::launch
