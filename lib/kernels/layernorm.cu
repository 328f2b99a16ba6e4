// bias + dropout + residual add + LayerNorm: one kernel forward, one backward
// (which also sums the weight, LayerNorm-bias and bias gradients per block of
// rows), plus the small column-sum finisher.
#include <algorithm>

#include "common.cuh"

namespace hpcbench::kernels {
namespace {

using device::bf16;

constexpr int kWarpsForward = 4;

// One warp per row. z = dropout(x + bias) + residual is rounded to T and
// stored (the backward needs it, as the unfused LayerNorm saves its input);
// the statistics are taken from the rounded z, as the unfused path computes
// them from its T-typed sum. Two passes over z (mean, then the centred sum of
// squares) rather than one sum and sum of squares: no cancellation.
// long: this is the kernel bench_kernels checked against its composite on an H100
// (docs/gpu-validation.md, 2026-11-27); splitting it changes what nvcc emits,
// which only a GPU run can check again.
template <typename T, int VEC>
__global__ void __launch_bounds__(kWarpsForward * 32)
    ln_fwd(const T* __restrict__ x, const T* __restrict__ bias, const T* __restrict__ residual,
           const T* __restrict__ weight, const T* __restrict__ ln_bias, T* __restrict__ y, T* __restrict__ z,
           float* __restrict__ mean_out, float* __restrict__ rstd_out, bool* __restrict__ keep, float p, float eps,
           launch::Philox philox, int64_t rows, int64_t n) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsForward + threadIdx.x / 32;
  if (row >= rows) return;
  device::SeedOffset so{};
  if (keep) so = device::unpack(philox);
  const float keep_p = 1.f - p, scale = 1.f / (1.f - p);
  const T* xr = x + row * n;
  const T* rr = residual + row * n;
  T* zr = z + row * n;
  float sum = 0.f;
  for (int64_t c = lane * VEC; c < n; c += 32 * VEC) {
    float v[VEC], b[VEC], res[VEC];
    device::load<T, VEC>(xr + c, v);
    device::load_or<T, VEC>(bias ? bias + c : nullptr, 0.f, b);
    device::load<T, VEC>(rr + c, res);
    if (keep) {
      const int64_t e = row * n + c;
      float u[VEC];
      if constexpr (VEC % 4 == 0) {
#pragma unroll
        for (int q = 0; q < VEC / 4; ++q) {
          float u4[4];
          device::uniform4(so, static_cast<uint64_t>(e / 4 + q), u4);
#pragma unroll
          for (int k = 0; k < 4; ++k) u[4 * q + k] = u4[k];
        }
      } else {
        // Element by element (n not a multiple of 4): the same draw the
        // vector path makes for this element, word e % 4 of group e / 4.
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          float u4[4];
          device::uniform4(so, static_cast<uint64_t>((e + k) / 4), u4);
          u[k] = u4[(e + k) % 4];
        }
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const bool kept = u[k] < keep_p;
        keep[e + k] = kept;
        v[k] = kept ? (v[k] + b[k]) * scale : 0.f;
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[k] += b[k];
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = device::to_float(device::from_float<T>(v[k] + res[k]));
    device::store<T, VEC>(zr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sum += v[k];
  }
  const float mean = device::warp_sum(sum) / static_cast<float>(n);
  float sq = 0.f;
  for (int64_t c = lane * VEC; c < n; c += 32 * VEC) {
    float v[VEC];
    device::load<T, VEC>(zr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sq += (v[k] - mean) * (v[k] - mean);
  }
  const float rstd = rsqrtf(device::warp_sum(sq) / static_cast<float>(n) + eps);
  for (int64_t c = lane * VEC; c < n; c += 32 * VEC) {
    float v[VEC], w[VEC], lb[VEC];
    device::load<T, VEC>(zr + c, v);
    device::load_or<T, VEC>(weight ? weight + c : nullptr, 1.f, w);
    device::load_or<T, VEC>(ln_bias ? ln_bias + c : nullptr, 0.f, lb);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = (v[k] - mean) * rstd * w[k] + lb[k];
    device::store<T, VEC>(y + row * n + c, v);
  }
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// Warps per backward block: as many as let each keep its own three fp32
// column sums (weight, LayerNorm bias, bias gradients) in shared memory
// within the default 48 KiB (n <= 1024 with four warps).
int backward_warps(int64_t n) { return n <= 1024 ? 4 : n <= 2048 ? 2 : 1; }

// A block takes a chunk of rows, a warp one row at a time. Per row: the two
// row sums of LayerNorm's backward (of g = dy * weight and of g * xhat), then
// dz = rstd * (g - mean(g) - xhat * mean(g * xhat)), written as the residual's
// gradient and, masked and scaled, as x's. The column sums that give the
// weight, LayerNorm-bias and bias gradients need dy, xhat and dx, which this
// kernel holds in registers: they are added here into the warp's own slice of
// shared memory (no atomics), the slices added in order at the end into one
// fp32 partial per block, which column_sums adds up. Deterministic.
template <typename T, int VEC>
__global__ void ln_bwd(const T* __restrict__ dy, const T* __restrict__ z, const float* __restrict__ mean,
                       const float* __restrict__ rstd, const bool* __restrict__ keep, float p,
                       const T* __restrict__ weight, T* __restrict__ dx, T* __restrict__ dresidual,
                       float* __restrict__ partial, int64_t rows, int64_t n, int64_t rows_per_block) {
  extern __shared__ float acc[];  // [warps][3][n]
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* mine = acc + static_cast<int64_t>(warp) * 3 * n;
  for (int64_t i = lane; i < 3 * n; i += 32) mine[i] = 0.f;
  __syncwarp();
  const float scale = 1.f / (1.f - p), inv_n = 1.f / static_cast<float>(n);
  const int64_t r0 = blockIdx.x * rows_per_block, r1 = min(rows, r0 + rows_per_block);
  for (int64_t row = r0 + warp; row < r1; row += warps) {
    const T* dyr = dy + row * n;
    const T* zr = z + row * n;
    const float mu = mean[row], rs = rstd[row];
    float s1 = 0.f, s2 = 0.f;
    for (int64_t c = lane * VEC; c < n; c += 32 * VEC) {
      float g[VEC], v[VEC], w[VEC];
      device::load<T, VEC>(dyr + c, g);
      device::load<T, VEC>(zr + c, v);
      device::load_or<T, VEC>(weight ? weight + c : nullptr, 1.f, w);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float xhat = (v[k] - mu) * rs, gw = g[k] * w[k];
        s1 += gw;
        s2 += gw * xhat;
      }
    }
    const float mean_g = device::warp_sum(s1) * inv_n, mean_gx = device::warp_sum(s2) * inv_n;
    for (int64_t c = lane * VEC; c < n; c += 32 * VEC) {
      float g[VEC], v[VEC], w[VEC], dz[VEC], d[VEC];
      device::load<T, VEC>(dyr + c, g);
      device::load<T, VEC>(zr + c, v);
      device::load_or<T, VEC>(weight ? weight + c : nullptr, 1.f, w);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float xhat = (v[k] - mu) * rs;
        dz[k] = rs * (g[k] * w[k] - mean_g - xhat * mean_gx);
        d[k] = keep ? (keep[row * n + c + k] ? dz[k] * scale : 0.f) : dz[k];
        mine[c + k] += g[k] * xhat;
        mine[n + c + k] += g[k];
        mine[2 * n + c + k] += d[k];
      }
      device::store<T, VEC>(dresidual + row * n + c, dz);
      if (dx) device::store<T, VEC>(dx + row * n + c, d);  // null without dropout: dx is dresidual then
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < 3 * n; i += blockDim.x) {
    float s = 0.f;
    for (int w = 0; w < warps; ++w) s += acc[static_cast<int64_t>(w) * 3 * n + i];
    partial[blockIdx.x * 3 * n + i] = s;
  }
}

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
cudaError_t forward(const void* x, const void* bias, const void* residual, const void* weight, const void* ln_bias,
                    void* y, void* z, float* mean, float* rstd, bool* keep, float p, float eps, launch::Philox philox,
                    int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows == 0 || n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = n % kVec == 0 && aligned16(x) && aligned16(bias) && aligned16(residual) && aligned16(weight) &&
                   aligned16(ln_bias) && aligned16(y) && aligned16(z);
  const auto blocks = static_cast<unsigned>(device::ceil_div(rows, kWarpsForward));
  auto launch_with = [&](auto kernel) {
    kernel<<<blocks, kWarpsForward * 32, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<const T*>(residual),
        static_cast<const T*>(weight), static_cast<const T*>(ln_bias), static_cast<T*>(y), static_cast<T*>(z), mean,
        rstd, keep, p, eps, philox, rows, n);
  };
  if (vec)
    launch_with(ln_fwd<T, kVec>);
  else
    launch_with(ln_fwd<T, 1>);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward(const void* dy, const void* z, const float* mean, const float* rstd, const bool* keep, float p,
                     const void* weight, void* dx, void* dresidual, void* dbias, void* dweight, void* dln_bias,
                     float* scratch, int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows == 0 || n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = n % kVec == 0 && aligned16(dy) && aligned16(z) && aligned16(weight) && aligned16(dx) &&
                   aligned16(dresidual);
  const int warps = backward_warps(n);
  const int64_t blocks = launch::layernorm_partial_blocks(rows, n);
  const int64_t rows_per_block = device::ceil_div(rows, blocks);
  const size_t smem = static_cast<size_t>(warps) * 3 * static_cast<size_t>(n) * sizeof(float);
  auto launch_with = [&](auto kernel) -> cudaError_t {
    // Over 48 KiB (n > 4096) a kernel must ask for it; not a stream
    // operation, so allowed while a graph is captured.
    if (smem > 48 * 1024)
      if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
          e != cudaSuccess)
        return e;
    kernel<<<static_cast<unsigned>(blocks), warps * 32, smem, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(z), mean, rstd, keep, p, static_cast<const T*>(weight),
        static_cast<T*>(dx), static_cast<T*>(dresidual), scratch, rows, n, rows_per_block);
    return cudaGetLastError();
  };
  cudaError_t e = vec ? launch_with(ln_bwd<T, kVec>) : launch_with(ln_bwd<T, 1>);
  if (e != cudaSuccess) return e;
  if (dbias || dweight || dln_bias) {
    const int threads = 256;
    // partial's per-block order is (dweight, dln_bias, dbias).
    device::column_sums<T><<<static_cast<unsigned>(device::ceil_div(3 * n, threads)), threads, 0, stream>>>(
        scratch, blocks, 3, n, static_cast<T*>(dweight), static_cast<T*>(dln_bias), static_cast<T*>(dbias));
  }
  return cudaGetLastError();
}

}  // namespace

namespace launch {

int64_t layernorm_partial_blocks(int64_t rows, int64_t n) {
  // Two rows per warp at least, at most 1024 blocks (a few waves on an A100
  // or H100; the partials then take 12 KiB per block at n = 768). Fixed by
  // the shape alone, so the sums' order is the same on every GPU.
  return std::max<int64_t>(1, std::min<int64_t>(device::ceil_div(rows, 2 * backward_warps(n)), 1024));
}

cudaError_t layernorm_forward(DType t, const void* x, const void* bias, const void* residual, const void* weight,
                              const void* ln_bias, void* y, void* z, float* mean, float* rstd, bool* keep, float p,
                              float eps, Philox philox, int64_t rows, int64_t n, cudaStream_t stream) {
  return t == DType::f32 ? forward<float>(x, bias, residual, weight, ln_bias, y, z, mean, rstd, keep, p, eps, philox,
                                          rows, n, stream)
                         : forward<bf16>(x, bias, residual, weight, ln_bias, y, z, mean, rstd, keep, p, eps, philox,
                                         rows, n, stream);
}

cudaError_t layernorm_backward(DType t, const void* dy, const void* z, const float* mean, const float* rstd,
                               const bool* keep, float p, const void* weight, void* dx, void* dresidual,
                               void* dbias, void* dweight, void* dln_bias, float* scratch, int64_t rows, int64_t n,
                               cudaStream_t stream) {
  return t == DType::f32 ? backward<float>(dy, z, mean, rstd, keep, p, weight, dx, dresidual, dbias, dweight,
                                           dln_bias, scratch, rows, n, stream)
                         : backward<bf16>(dy, z, mean, rstd, keep, p, weight, dx, dresidual, dbias, dweight,
                                          dln_bias, scratch, rows, n, stream);
}

}  // namespace launch
}  // namespace hpcbench::kernels
