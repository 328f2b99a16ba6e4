#pragma once
// Device helpers shared by the fused kernels: vector loads, fp32 <-> bf16,
// Philox, warp sums and the column-sum finisher.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "launch.h"

namespace hpcbench::kernels::device {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
// Round to nearest even, as at::BFloat16 does: both paths round alike.
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) { return __float2bfloat16_rn(v); }

// VEC consecutive elements, loaded and stored as one 16-byte access when
// VEC * sizeof(T) == 16 (callers check the alignment before choosing VEC).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};
template <typename T, int VEC>
__device__ __forceinline__ void load(const T* p, float (&out)[VEC]) {
  Pack<T, VEC> pk = *reinterpret_cast<const Pack<T, VEC>*>(p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = to_float(pk.v[i]);
}
template <typename T, int VEC>
__device__ __forceinline__ void store(T* p, const float (&in)[VEC]) {
  Pack<T, VEC> pk;
#pragma unroll
  for (int i = 0; i < VEC; ++i) pk.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Pack<T, VEC>*>(p) = pk;
}
// An optional operand (bias, weight): `fill` where the pointer is null.
template <typename T, int VEC>
__device__ __forceinline__ void load_or(const T* p, float fill, float (&out)[VEC]) {
  if (p) {
    load<T, VEC>(p, out);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fill;
  }
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"), the generator curand's Philox state and ATen's CUDA generator use.
__device__ __forceinline__ uint4 philox4x32_10(uint4 ctr, uint2 key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0 = __umulhi(kM0, ctr.x), lo0 = kM0 * ctr.x;
    uint32_t hi1 = __umulhi(kM1, ctr.z), lo1 = kM1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key.x += kW0;
    key.y += kW1;
  }
  return ctr;
}

// at::cuda::philox::unpack's semantics: under capture the seed and the offset
// are read from device memory when the kernel runs, so a replayed graph gets
// the generator's current offset and draws a new mask.
struct SeedOffset {
  uint64_t seed, offset;
};
__device__ __forceinline__ SeedOffset unpack(const launch::Philox& p) {
  if (p.captured)
    return {static_cast<uint64_t>(*p.seed_ptr), static_cast<uint64_t>(*p.offset_ptr) + p.offset_intragraph};
  return {p.seed, p.offset};
}

// Four uniform draws in (0, 1) for elements 4g .. 4g + 3: subsequence g,
// counter offset / 4 (launch.h, kPhiloxIncrement).
__device__ __forceinline__ void uniform4(SeedOffset so, uint64_t group, float (&u)[4]) {
  uint64_t c = so.offset / 4;
  uint4 ctr = make_uint4(static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), static_cast<uint32_t>(group),
                         static_cast<uint32_t>(group >> 32));
  uint4 r = philox4x32_10(ctr, make_uint2(static_cast<uint32_t>(so.seed), static_cast<uint32_t>(so.seed >> 32)));
  constexpr float k2pow32inv = 2.3283064365386963e-10f;  // 2^-32
  u[0] = (static_cast<float>(r.x) + 0.5f) * k2pow32inv;
  u[1] = (static_cast<float>(r.y) + 0.5f) * k2pow32inv;
  u[2] = (static_cast<float>(r.z) + 0.5f) * k2pow32inv;
  u[3] = (static_cast<float>(r.w) + 0.5f) * k2pow32inv;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// out_k[c] = sum over b of partial[b][k][c], b in order: the second step of
// the bias- and weight-gradient sums. One thread per (k, column).
template <typename T>
__global__ void column_sums(const float* __restrict__ partial, int64_t blocks, int outputs, int64_t n, T* out0,
                            T* out1, T* out2) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= outputs * n) return;
  int k = static_cast<int>(i / n);
  int64_t c = i % n;
  T* out = k == 0 ? out0 : k == 1 ? out1 : out2;
  if (!out) return;
  float s = 0.f;
  for (int64_t b = 0; b < blocks; ++b) s += partial[(b * outputs + k) * n + c];
  out[c] = from_float<T>(s);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace hpcbench::kernels::device
