// The embeddings' forward as one kernel: each token's three rows gathered,
// added and normalised by one block, so that the sum never goes to memory.
#include "common.cuh"

namespace hpcbench::kernels {
namespace {

using device::bf16;

constexpr int kThreads = 256;

// The block's sum, every thread getting it: warps' sums through shared
// memory, added in warp order (deterministic).
__device__ float block_sum(float v, float* warp_sums) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = device::warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is reused by the next call
  return total;
}

// One block per token. The sum is rounded to T after each add, as the
// composite's two T-typed adds round it, so that the statistics come from the
// same values and the backward's recomputed sum is the one normalised here.
// Kept in shared memory (n floats) for the two passes over it: the mean, then
// the centred sum of squares (no cancellation). An id outside its table
// writes NaN over the token's row instead of reading out of bounds.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    emb_ln_fwd(const int64_t* __restrict__ ids, const int64_t* __restrict__ types, const T* __restrict__ word,
               const T* __restrict__ type, const T* __restrict__ pos, const T* __restrict__ ln_w,
               const T* __restrict__ ln_b, T* __restrict__ y, float* __restrict__ mean_out,
               float* __restrict__ rstd_out, float eps, int64_t seq, int64_t n, int64_t vocab, int64_t type_vocab) {
  extern __shared__ float e[];
  __shared__ float warp_sums[kThreads / 32];
  const int64_t row = blockIdx.x;
  const int64_t id = ids[row], ty = types[row], p = row % seq;
  T* yr = y + row * n;
  if (id < 0 || id >= vocab || ty < 0 || ty >= type_vocab) {
    for (int64_t c = threadIdx.x; c < n; c += kThreads) yr[c] = device::from_float<T>(__int_as_float(0x7fc00000));
    if (threadIdx.x == 0) mean_out[row] = rstd_out[row] = __int_as_float(0x7fc00000);
    return;
  }
  const T* wr = word + id * n;
  const T* tr = type + ty * n;
  const T* pr = pos + p * n;
  float sum = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += kThreads) {
    float v = device::to_float(device::from_float<T>(device::to_float(wr[c]) + device::to_float(tr[c])));
    v = device::to_float(device::from_float<T>(v + device::to_float(pr[c])));
    e[c] = v;
    sum += v;
  }
  const float mean = block_sum(sum, warp_sums) / static_cast<float>(n);
  float sq = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += kThreads) sq += (e[c] - mean) * (e[c] - mean);
  const float rstd = rsqrtf(block_sum(sq, warp_sums) / static_cast<float>(n) + eps);
  for (int64_t c = threadIdx.x; c < n; c += kThreads)
    yr[c] = device::from_float<T>((e[c] - mean) * rstd * device::to_float(ln_w[c]) + device::to_float(ln_b[c]));
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

template <typename T>
cudaError_t forward(const int64_t* ids, const int64_t* types, const void* word, const void* type, const void* pos,
                    const void* ln_w, const void* ln_b, void* y, float* mean, float* rstd, float eps, int64_t rows,
                    int64_t seq, int64_t n, int64_t vocab, int64_t type_vocab, cudaStream_t stream) {
  if (rows == 0 || n == 0) return cudaSuccess;
  const size_t smem = static_cast<size_t>(n) * sizeof(float);
  // Over 48 KiB (n > 12288) a kernel must ask for it; not a stream
  // operation, so allowed while a graph is captured.
  if (smem > 48 * 1024)
    if (cudaError_t err = cudaFuncSetAttribute(emb_ln_fwd<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
        err != cudaSuccess)
      return err;
  emb_ln_fwd<T><<<static_cast<unsigned>(rows), kThreads, smem, stream>>>(
      ids, types, static_cast<const T*>(word), static_cast<const T*>(type), static_cast<const T*>(pos),
      static_cast<const T*>(ln_w), static_cast<const T*>(ln_b), static_cast<T*>(y), mean, rstd, eps, seq, n, vocab,
      type_vocab);
  return cudaGetLastError();
}

}  // namespace

namespace launch {

cudaError_t embedding_layernorm_forward(DType t, const int64_t* ids, const int64_t* types, const void* word,
                                        const void* type, const void* pos, const void* ln_w, const void* ln_b,
                                        void* y, float* mean, float* rstd, float eps, int64_t rows, int64_t seq,
                                        int64_t n, int64_t vocab, int64_t type_vocab, cudaStream_t stream) {
  return t == DType::f32 ? forward<float>(ids, types, word, type, pos, ln_w, ln_b, y, mean, rstd, eps, rows, seq, n,
                                          vocab, type_vocab, stream)
                         : forward<bf16>(ids, types, word, type, pos, ln_w, ln_b, y, mean, rstd, eps, rows, seq, n,
                                         vocab, type_vocab, stream);
}

}  // namespace launch
}  // namespace hpcbench::kernels
