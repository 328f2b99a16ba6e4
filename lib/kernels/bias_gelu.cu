// bias + exact (erf) GELU: one kernel forward; one backward that also sums
// the bias gradient per block of rows, plus the small column-sum finisher.
#include <algorithm>

#include "common.cuh"

namespace hpcbench::kernels {
namespace {

using device::bf16;

// ATen's CUDA GELU (GeluCUDAKernelImpl, approximate="none") in fp32.
__device__ __forceinline__ float gelu(float u) { return 0.5f * u * (1.f + erff(u * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_grad(float u) {
  constexpr float kBeta = 0.3989422804014327f;  // 1 / sqrt(2 pi)
  float cdf = 0.5f * (1.f + erff(u * 0.70710678118654752f));
  float pdf = expf(-0.5f * u * u) * kBeta;
  return cdf + u * pdf;
}

template <typename T, int VEC>
__global__ void bias_gelu_fwd(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, int64_t total,
                              int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * VEC;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC; i < total; i += stride) {
    float v[VEC], b[VEC];
    device::load<T, VEC>(x + i, v);
    device::load_or<T, VEC>(bias ? bias + i % n : nullptr, 0.f, b);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = gelu(v[k] + b[k]);
    device::store<T, VEC>(y + i, v);
  }
}

constexpr int kLanes = 32, kRowLanes = 8;

// Block (kLanes, kRowLanes): a tile of kLanes * VEC columns over one chunk of
// rows. The bias gradient needs dx summed over rows, which this kernel holds
// in registers as it writes dx: folding the sum in here saves reading dx
// again. Each block leaves one fp32 partial per column (summed in a fixed
// order, so the result does not depend on scheduling); column_sums adds them.
template <typename T, int VEC>
__global__ void bias_gelu_bwd(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ bias,
                              T* __restrict__ dx, float* __restrict__ partial, int64_t rows, int64_t n,
                              int64_t rows_per_chunk) {
  __shared__ float acc[kRowLanes][kLanes * VEC];
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x) * VEC;
  const int64_t r0 = blockIdx.y * rows_per_chunk, r1 = min(rows, r0 + rows_per_chunk);
  float sum[VEC] = {};
  if (c < n) {
    float b[VEC];
    device::load_or<T, VEC>(bias ? bias + c : nullptr, 0.f, b);
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) {
      float g[VEC], u[VEC];
      device::load<T, VEC>(dy + r * n + c, g);
      device::load<T, VEC>(x + r * n + c, u);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        g[k] *= gelu_grad(u[k] + b[k]);
        sum[k] += g[k];
      }
      device::store<T, VEC>(dx + r * n + c, g);
    }
  }
  if (!partial) return;
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc[threadIdx.y][threadIdx.x * VEC + k] = sum[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      float s = 0.f;
      for (int j = 0; j < kRowLanes; ++j) s += acc[j][threadIdx.x * VEC + k];
      partial[blockIdx.y * n + c + k] = s;
    }
  }
}

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
cudaError_t forward(const void* x, const void* bias, void* y, int64_t rows, int64_t n, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t total = rows * n;
  if (total == 0) return cudaSuccess;
  const int threads = 256;
  const bool vec = n % kVec == 0 && aligned16(x) && aligned16(bias) && aligned16(y);
  const int per_thread = vec ? kVec : 1;
  // A grid-stride loop: one element (or vector) per thread up to the grid's
  // limit of 65535 blocks, more per thread beyond.
  const int64_t blocks = std::min<int64_t>(device::ceil_div(total, threads * per_thread), 65535);
  auto xs = static_cast<const T*>(x);
  auto bs = static_cast<const T*>(bias);
  auto ys = static_cast<T*>(y);
  if (vec)
    bias_gelu_fwd<T, kVec><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(xs, bs, ys, total, n);
  else
    bias_gelu_fwd<T, 1><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(xs, bs, ys, total, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward(const void* dy, const void* x, const void* bias, void* dx, void* dbias, float* scratch,
                     int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows * n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vec = n % kVec == 0 && aligned16(dy) && aligned16(x) && aligned16(bias) && aligned16(dx);
  const int64_t chunks = launch::bias_gelu_partial_blocks(rows, n);
  const int64_t rows_per_chunk = device::ceil_div(rows, chunks);
  float* partial = dbias ? scratch : nullptr;
  auto args = [&](auto kernel, int v) {
    dim3 grid(static_cast<unsigned>(device::ceil_div(n, kLanes * v)), static_cast<unsigned>(chunks));
    kernel<<<grid, dim3(kLanes, kRowLanes), 0, stream>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                                          static_cast<const T*>(bias), static_cast<T*>(dx), partial,
                                                          rows, n, rows_per_chunk);
  };
  if (vec)
    args(bias_gelu_bwd<T, kVec>, kVec);
  else
    args(bias_gelu_bwd<T, 1>, 1);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (dbias) {
    const int threads = 256;
    device::column_sums<T><<<static_cast<unsigned>(device::ceil_div(n, threads)), threads, 0, stream>>>(
        scratch, chunks, 1, n, static_cast<T*>(dbias), nullptr, nullptr);
  }
  return cudaGetLastError();
}

}  // namespace

namespace launch {

int64_t bias_gelu_partial_blocks(int64_t rows, int64_t n) {
  // About a thousand blocks in all (column tiles times row chunks), a few
  // waves on an A100 or H100; fixed by the shape alone, so the sum's order
  // (and its rounding) is the same on every GPU.
  const int64_t tiles = device::ceil_div(std::max<int64_t>(n, 1), 256);
  return std::max<int64_t>(1, std::min(device::ceil_div(rows, 32), device::ceil_div(1024, tiles)));
}

cudaError_t bias_gelu_forward(DType t, const void* x, const void* bias, void* y, int64_t rows, int64_t n,
                              cudaStream_t stream) {
  return t == DType::f32 ? forward<float>(x, bias, y, rows, n, stream)
                         : forward<bf16>(x, bias, y, rows, n, stream);
}

cudaError_t bias_gelu_backward(DType t, const void* dy, const void* x, const void* bias, void* dx, void* dbias,
                               float* scratch, int64_t rows, int64_t n, cudaStream_t stream) {
  return t == DType::f32 ? backward<float>(dy, x, bias, dx, dbias, scratch, rows, n, stream)
                         : backward<bf16>(dy, x, bias, dx, dbias, scratch, rows, n, stream);
}

}  // namespace launch
}  // namespace hpcbench::kernels
