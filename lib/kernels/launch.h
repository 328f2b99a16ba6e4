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

// The embeddings (embedding_layernorm.cu): for token r of `rows` (position
// r % seq), e = (word[ids[r]] + type[types[r]]) + pos[r % seq], rounded to
// the dtype after each add; y = (e - mean) * rstd * ln_w + ln_b, mean and
// rstd (fp32, per token) stored. ids and types int64; tables of n columns.
cudaError_t embedding_layernorm_forward(DType t, const int64_t* ids, const int64_t* types, const void* word,
                                        const void* type, const void* pos, const void* ln_w, const void* ln_b,
                                        void* y, float* mean, float* rstd, float eps, int64_t rows, int64_t seq,
                                        int64_t n, int64_t vocab, int64_t type_vocab, cudaStream_t stream);

// The master-weight AdamW step (master_adamw.cu) over a flat of parameters
// laid end to end: the fp32 master, m and v and the compute-dtype weights
// are flat buffers, the gradients one tensor per parameter (autograd's).
// A table of up to kAdamWTensors of them travels as the kernel's argument
// (baked into a captured graph, no device memory to fill); a flat of more
// parameters takes one launch per table.
constexpr int kAdamWTensors = 256;
constexpr int kAdamWGroups = 4;
struct AdamWTable {
  const void* grad[kAdamWTensors];        // null: the parameter has no gradient (zeros)
  int64_t start[kAdamWTensors + 1];       // flat index of each, then the end
  unsigned char group[kAdamWTensors];     // its parameter group
  int count = 0;
};
// Per parameter group, the rate from the device (lr_ptr, read when the
// kernel runs: a replayed graph takes the schedule's current rate) or, where
// null, lr_value; the step count and the clip coefficient from the device
// (coef null: no clipping).
struct AdamWHyper {
  const float* lr_ptr[kAdamWGroups] = {};
  float lr_value[kAdamWGroups] = {};
  float weight_decay[kAdamWGroups] = {};
  // 1 - beta taken in double, then rounded (1 - 0.999f in float is 1.3e-5
  // off 0.001, which torch.optim.AdamW's double arithmetic is not).
  float beta1 = 0.9f, beta2 = 0.999f, one_minus_beta1 = 0.1f, one_minus_beta2 = 0.001f, eps = 1e-8f;
  const float* step = nullptr;
  const float* coef = nullptr;
};
// Elements per block of both passes (the norm's partial sums are one per block).
constexpr int64_t kAdamWChunk = 4096;
inline int64_t adamw_blocks(const AdamWTable& t) {
  return (t.start[t.count] - t.start[0] + kAdamWChunk - 1) / kAdamWChunk;
}

// partial[b] = the sum of g^2 (fp32, from the compute-dtype gradients) over
// block b of the table's range.
cudaError_t grad_sq_partials(DType t, const AdamWTable& table, float* partial, cudaStream_t stream);
// norm = sqrt(sum of partial[0 .. blocks)) in a fixed order (deterministic),
// coef = min(1, max_norm / (norm + 1e-6)), as clip_grad_norm_ (coef may be
// null: the norm alone).
cudaError_t grad_norm_finish(const float* partial, int64_t blocks, float max_norm, float* norm, float* coef,
                             cudaStream_t stream);
// The AdamW update of the table's range: g = grad * coef; master -= lr * wd
// * master; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; master -= lr /
// bc1 * m / (sqrt(v) / sqrt(bc2) + eps), with bc = 1 - b^step; weight =
// master rounded to the compute dtype. `master`, `m`, `v`, `weight` point
// at the flat's element 0 (the table's starts index them).
cudaError_t master_adamw(DType t, const AdamWTable& table, const AdamWHyper& hyper, float* master, float* m,
                         float* v, void* weight, cudaStream_t stream);

}  // namespace hpcbench::kernels::launch
