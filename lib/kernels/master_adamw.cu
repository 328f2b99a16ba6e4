// The master-weight AdamW step: the gradient norm (per-block partial sums of
// squares, then one block adding them in order), and one pass that reads the
// compute-dtype gradient, updates the fp32 master, m and v, and writes the
// compute-dtype weight. Block b covers flat elements [b, b + 1) * kAdamWChunk
// of the table's range, whatever parameters they belong to: the flat layout
// makes the whole model one launch.
#include <algorithm>
#include <cmath>

#include "common.cuh"

namespace hpcbench::kernels {
namespace {

using device::bf16;
using launch::AdamWHyper;
using launch::AdamWTable;
using launch::kAdamWChunk;

constexpr int kThreads = 256, kVec = 4;

// The first parameter whose range reaches past flat index `a` (the table's
// starts are sorted; every thread of a block asks the same, so the argument
// reads are broadcasts).
__device__ __forceinline__ int first_tensor(const AdamWTable& t, int64_t a) {
  int lo = 0, hi = t.count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t.start[mid] <= a) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Visits every flat index of this block's range with its gradient in fp32
// and its parameter's group: op.four(g, i, group) for four elements from i
// (a multiple of four, so that 16-byte loads of the fp32 flats line up)
// where the segment's gradient allows 8- or 16-byte loads there too,
// op.one(g, i, group) at the segment's ragged ends and wherever it does not.
// The table is read here alone, by value: an operation that kept a
// reference to the kernel's argument would make every thread copy it to
// local memory.
template <typename G, typename Op>
__device__ __forceinline__ void for_each_element(const AdamWTable& t, Op& op) {
  const int64_t a = t.start[0] + static_cast<int64_t>(blockIdx.x) * kAdamWChunk;
  const int64_t b = min(a + kAdamWChunk, t.start[t.count]);
  for (int k = first_tensor(t, a); k < t.count && t.start[k] < b; ++k) {
    const int64_t s = max(a, t.start[k]), e = min(b, t.start[k + 1]);
    const G* g = static_cast<const G*>(t.grad[k]);
    if (g) g += s - t.start[k];
    const int64_t head = min(e - s, (kVec - s % kVec) % kVec);
    const bool vec = g == nullptr || reinterpret_cast<uintptr_t>(g + head) % (sizeof(G) * kVec) == 0;
    const int64_t body_end = vec ? s + head + (e - s - head) / kVec * kVec : s;
    const int grp = t.group[k];
    op.begin(grp);
    auto one = [&](int64_t i) { op.one(g ? device::to_float(g[i - s]) : 0.f, i, grp); };
    for (int64_t i = s + threadIdx.x; i < (vec ? s + head : e); i += kThreads) one(i);
    for (int64_t i = s + head + threadIdx.x * kVec; i < body_end; i += kThreads * kVec) {
      float gv[kVec];
      device::load_or<G, kVec>(g ? g + (i - s) : nullptr, 0.f, gv);
      op.four(gv, i, grp);
    }
    if (vec)
      for (int64_t i = body_end + threadIdx.x; i < e; i += kThreads) one(i);
  }
}

struct SumSquares {
  float sum = 0.f;
  __device__ void begin(int) {}
  __device__ void one(float g, int64_t, int) { sum += g * g; }
  __device__ void four(const float (&g)[kVec], int64_t, int) {
#pragma unroll
    for (int q = 0; q < kVec; ++q) sum += g[q] * g[q];
  }
};

template <typename G>
__global__ void __launch_bounds__(kThreads) sq_partials(AdamWTable t, float* __restrict__ partial) {
  SumSquares op;
  for_each_element<G>(t, op);
  __shared__ float warps[kThreads / 32];
  const float sum = device::warp_sum(op.sum);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) s += warps[w];
    partial[blockIdx.x] = s;
  }
}

constexpr int kFinishThreads = 1024;

__global__ void __launch_bounds__(kFinishThreads)
    norm_finish(const float* __restrict__ partial, int64_t blocks, float max_norm, float* norm, float* coef) {
  __shared__ float warps[kFinishThreads / 32];
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < blocks; i += kFinishThreads) sum += partial[i];
  sum = device::warp_sum(sum);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < kFinishThreads / 32; ++w) s += warps[w];
    const float n = sqrtf(s);
    *norm = n;
    if (coef) *coef = fminf(1.f, max_norm / (n + 1e-6f));
  }
}

// The bias corrections from the device's step count, in double as ATen's
// fused AdamW takes them (1 - 0.999^step loses digits in float early on).
struct Corrections {
  float bc1, bc2_sqrt;
};
__device__ __forceinline__ Corrections corrections(const AdamWHyper& h) {
  const double step = h.step ? static_cast<double>(*h.step) : 1.0;
  return {static_cast<float>(1.0 - pow(static_cast<double>(h.beta1), step)),
          static_cast<float>(sqrt(1.0 - pow(static_cast<double>(h.beta2), step)))};
}

// One element's update (launch.h, master_adamw), in fp32.
struct Update {
  float g, p, m, v;
};
__device__ __forceinline__ Update update_one(float g, float p, float m, float v, float lr, float wd, float b1, float b2,
                                             float omb1, float omb2, float eps, float step_size, float bc2_sqrt) {
  p -= lr * wd * p;
  m = b1 * m + omb1 * g;
  v = b2 * v + omb2 * g * g;
  p -= step_size * m / (sqrtf(v) / bc2_sqrt + eps);
  return {g, p, m, v};
}

// The update's operands and constants, by value.
template <typename G>
struct AdamWOp {
  float* __restrict__ master;
  float* __restrict__ m;
  float* __restrict__ v;
  G* __restrict__ weight;
  float coef, bc1, bc2_sqrt, b1, b2, omb1, omb2, eps;
  float lr[launch::kAdamWGroups], wd[launch::kAdamWGroups];
  float seg_lr = 0.f, seg_wd = 0.f;  // the current segment's group's

  // Selected by comparisons, not by an index, so that lr and wd stay in
  // registers (an indexed array would live in local memory).
  __device__ static float pick(const float (&a)[launch::kAdamWGroups], int grp) {
    float r = a[0];
#pragma unroll
    for (int q = 1; q < launch::kAdamWGroups; ++q)
      if (grp == q) r = a[q];
    return r;
  }
  __device__ void begin(int grp) {
    seg_lr = pick(lr, grp);
    seg_wd = pick(wd, grp);
  }
  __device__ void one(float g, int64_t i, int) {
    Update u = update_one(g * coef, master[i], m[i], v[i], seg_lr, seg_wd, b1, b2, omb1, omb2, eps, seg_lr / bc1,
                          bc2_sqrt);
    master[i] = u.p;
    m[i] = u.m;
    v[i] = u.v;
    weight[i] = device::from_float<G>(u.p);
  }
  __device__ void four(const float (&g)[kVec], int64_t i, int) {
    float p[kVec], mm[kVec], vv[kVec];
    device::load<float, kVec>(master + i, p);
    device::load<float, kVec>(m + i, mm);
    device::load<float, kVec>(v + i, vv);
#pragma unroll
    for (int q = 0; q < kVec; ++q) {
      Update u = update_one(g[q] * coef, p[q], mm[q], vv[q], seg_lr, seg_wd, b1, b2, omb1, omb2, eps, seg_lr / bc1,
                          bc2_sqrt);
      p[q] = u.p;
      mm[q] = u.m;
      vv[q] = u.v;
    }
    device::store<float, kVec>(master + i, p);
    device::store<float, kVec>(m + i, mm);
    device::store<float, kVec>(v + i, vv);
    device::store<G, kVec>(weight + i, p);
  }
};

template <typename G>
__global__ void __launch_bounds__(kThreads)
    adamw(AdamWTable t, AdamWHyper h, float* __restrict__ master, float* __restrict__ m, float* __restrict__ v,
          G* __restrict__ weight) {
  const Corrections c = corrections(h);
  AdamWOp<G> op{master, m, v, weight, h.coef ? *h.coef : 1.f, c.bc1, c.bc2_sqrt, h.beta1, h.beta2, h.one_minus_beta1,
                h.one_minus_beta2, h.eps, {}, {}, 0.f, 0.f};
#pragma unroll
  for (int q = 0; q < launch::kAdamWGroups; ++q) {
    op.lr[q] = h.lr_ptr[q] ? *h.lr_ptr[q] : h.lr_value[q];
    op.wd[q] = h.weight_decay[q];
  }
  for_each_element<G>(t, op);
}

template <typename G>
cudaError_t partials(const AdamWTable& table, float* partial, cudaStream_t stream) {
  const int64_t blocks = launch::adamw_blocks(table);
  if (blocks == 0) return cudaSuccess;
  sq_partials<G><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(table, partial);
  return cudaGetLastError();
}

template <typename G>
cudaError_t update(const AdamWTable& table, const AdamWHyper& hyper, float* master, float* m, float* v,
                   void* weight, cudaStream_t stream) {
  const int64_t blocks = launch::adamw_blocks(table);
  if (blocks == 0) return cudaSuccess;
  adamw<G><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(table, hyper, master, m, v,
                                                                   static_cast<G*>(weight));
  return cudaGetLastError();
}

}  // namespace

namespace launch {

cudaError_t grad_sq_partials(DType t, const AdamWTable& table, float* partial, cudaStream_t stream) {
  return t == DType::f32 ? partials<float>(table, partial, stream) : partials<bf16>(table, partial, stream);
}

cudaError_t grad_norm_finish(const float* partial, int64_t blocks, float max_norm, float* norm, float* coef,
                             cudaStream_t stream) {
  norm_finish<<<1, kFinishThreads, 0, stream>>>(partial, blocks, max_norm, norm, coef);
  return cudaGetLastError();
}

cudaError_t master_adamw(DType t, const AdamWTable& table, const AdamWHyper& hyper, float* master, float* m,
                         float* v, void* weight, cudaStream_t stream) {
  return t == DType::f32 ? update<float>(table, hyper, master, m, v, weight, stream)
                         : update<bf16>(table, hyper, master, m, v, weight, stream);
}

}  // namespace launch
}  // namespace hpcbench::kernels
