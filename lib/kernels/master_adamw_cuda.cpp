// Tensors in, tables out: the master-weight AdamW kernels of master_adamw.cu
// on the current stream. Nothing here allocates or reads the device: the
// parameters' gradient pointers, offsets and groups go into the kernels'
// argument tables (captured by value in a CUDA graph; a replay's gradients
// sit at the addresses the capture's did, in the graph's memory pool).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "kernels/cuda_ops.h"
#include "kernels/launch.h"

namespace hpcbench::kernels::cuda {
namespace {

launch::DType adamw_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat ? launch::DType::f32 : launch::DType::bf16;
}

bool adamw_aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16 == 0; }

// The tables of the parameters [k0, k0 + kAdamWTensors), each call.
template <typename F>
void for_each_adamw_table(const MasterAdamW& s, F&& f) {
  const size_t n = s.grads.size();
  for (size_t k0 = 0; k0 < n; k0 += launch::kAdamWTensors) {
    launch::AdamWTable t;
    t.count = static_cast<int>(std::min<size_t>(launch::kAdamWTensors, n - k0));
    for (int j = 0; j < t.count; ++j) {
      const auto& g = s.grads[k0 + static_cast<size_t>(j)];
      t.grad[j] = g.defined() ? g.const_data_ptr() : nullptr;
      t.start[j] = s.offsets[k0 + static_cast<size_t>(j)];
      t.group[j] = static_cast<unsigned char>(s.groups[k0 + static_cast<size_t>(j)]);
    }
    t.start[t.count] = k0 + static_cast<size_t>(t.count) < n ? s.offsets[k0 + static_cast<size_t>(t.count)] : s.numel;
    f(t);
  }
}

cudaStream_t adamw_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

}  // namespace

bool master_adamw_supported(const MasterAdamW& s) {
  const auto dtype = s.weight.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kFloat) return false;
  if (s.weight_decay.size() > static_cast<size_t>(launch::kAdamWGroups)) return false;
  for (auto* t : {&s.master, &s.exp_avg, &s.exp_avg_sq, &s.weight})
    if (!t->is_cuda() || t->device() != s.weight.device() || !t->is_contiguous() || !adamw_aligned16(*t)) return false;
  if (!s.step.is_cuda() || s.step.scalar_type() != at::kFloat) return false;
  for (const auto& lr : s.lr)
    if (lr.defined() && (!lr.is_cuda() || lr.scalar_type() != at::kFloat)) return false;
  for (const auto& g : s.grads)
    if (g.defined() && (g.scalar_type() != dtype || !g.is_contiguous() || g.device() != s.weight.device())) return false;
  return true;
}

int64_t grad_norm_scratch(const MasterAdamW& s) {
  int64_t blocks = 0;
  for_each_adamw_table(s, [&](const launch::AdamWTable& t) { blocks += launch::adamw_blocks(t); });
  return blocks;
}

void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef,
               const at::Tensor& scratch) {
  c10::cuda::CUDAGuard guard(s.weight.device());
  const int64_t blocks = cuda::grad_norm_scratch(s);
  TORCH_CHECK(scratch.is_cuda() && scratch.scalar_type() == at::kFloat && scratch.numel() >= blocks,
              "grad_norm: the scratch holds ", scratch.numel(), " floats, ", blocks, " needed");
  TORCH_CHECK(norm.is_cuda() && norm.scalar_type() == at::kFloat && (!coef.defined() || coef.scalar_type() == at::kFloat),
              "grad_norm: the norm and the coefficient are fp32 on the device");
  int64_t at_block = 0;
  float* partial = scratch.mutable_data_ptr<float>();
  for_each_adamw_table(s, [&](const launch::AdamWTable& t) {
    C10_CUDA_CHECK(launch::grad_sq_partials(adamw_dtype(s.weight), t, partial + at_block, adamw_stream()));
    at_block += launch::adamw_blocks(t);
  });
  C10_CUDA_CHECK(launch::grad_norm_finish(partial, blocks, static_cast<float>(max_norm), norm.mutable_data_ptr<float>(),
                                          coef.defined() ? coef.mutable_data_ptr<float>() : nullptr, adamw_stream()));
}

void master_adamw(const MasterAdamW& s, const at::Tensor& coef) {
  c10::cuda::CUDAGuard guard(s.weight.device());
  TORCH_CHECK(!coef.defined() || (coef.is_cuda() && coef.scalar_type() == at::kFloat),
              "master_adamw: the clip coefficient is fp32 on the device");
  launch::AdamWHyper h;
  for (size_t g = 0; g < s.weight_decay.size(); ++g) {
    const bool on_device = g < s.lr.size() && s.lr[g].defined();
    h.lr_ptr[g] = on_device ? s.lr[g].const_data_ptr<float>() : nullptr;
    h.lr_value[g] = on_device ? 0.f : static_cast<float>(s.lr_value.at(g));
    h.weight_decay[g] = static_cast<float>(s.weight_decay[g]);
  }
  h.beta1 = static_cast<float>(s.beta1);
  h.beta2 = static_cast<float>(s.beta2);
  h.one_minus_beta1 = static_cast<float>(1.0 - s.beta1);
  h.one_minus_beta2 = static_cast<float>(1.0 - s.beta2);
  h.eps = static_cast<float>(s.eps);
  h.step = s.step.const_data_ptr<float>();
  h.coef = coef.defined() ? coef.const_data_ptr<float>() : nullptr;
  for_each_adamw_table(s, [&](const launch::AdamWTable& t) {
    C10_CUDA_CHECK(launch::master_adamw(adamw_dtype(s.weight), t, h, s.master.mutable_data_ptr<float>(),
                                        s.exp_avg.mutable_data_ptr<float>(), s.exp_avg_sq.mutable_data_ptr<float>(),
                                        s.weight.mutable_data_ptr(), adamw_stream()));
  });
}

}  // namespace hpcbench::kernels::cuda
