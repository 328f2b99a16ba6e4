// Chooses, per call, between the master-weight AdamW kernel
// (master_adamw_cuda.cpp) and its ATen composite.
#include "kernels/master_adamw.h"

#include <ATen/ATen.h>

#include "kernels/fused.h"
#if HPCBENCH_CUDA_KERNELS_BUILT
#include "kernels/cuda_ops.h"
#endif

namespace hpcbench::kernels {

namespace {

// `rates`: the update needs each group's rate and decay; the norm does not.
void check_master_adamw_args(const MasterAdamW& s, bool rates) {
  TORCH_CHECK(s.offsets.size() == s.grads.size() && s.groups.size() == s.grads.size(),
              "master_adamw: ", s.grads.size(), " gradients, ", s.offsets.size(), " offsets, ", s.groups.size(),
              " groups");
  for (auto* t : {&s.master, &s.exp_avg, &s.exp_avg_sq})
    TORCH_CHECK(t->defined() && t->scalar_type() == at::kFloat && t->dim() == 1 && t->numel() >= s.numel,
                "master_adamw: the master, m and v must be fp32 flats of at least ", s.numel, " elements");
  TORCH_CHECK(s.weight.defined() && s.weight.dim() == 1 && s.weight.numel() >= s.numel,
              "master_adamw: the weights must be a flat of at least ", s.numel, " elements");
  TORCH_CHECK(s.step.defined() && s.step.numel() == 1, "master_adamw: the step count must be one element");
  if (!rates) return;
  for (int g : s.groups)
    TORCH_CHECK(g >= 0 && static_cast<size_t>(g) < s.weight_decay.size() &&
                    ((static_cast<size_t>(g) < s.lr.size() && s.lr[static_cast<size_t>(g)].defined()) ||
                     static_cast<size_t>(g) < s.lr_value.size()),
                "master_adamw: group ", g, " has no rate or weight decay");
}

}  // namespace

bool master_adamw_uses_cuda(const MasterAdamW& s) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  return uses_cuda_kernels(s.weight) && cuda::master_adamw_supported(s);
#else
  (void)s;
  return false;
#endif
}

int64_t grad_norm_scratch(const MasterAdamW& s) {
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (master_adamw_uses_cuda(s)) return cuda::grad_norm_scratch(s);
#endif
  (void)s;
  return 0;
}

void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef,
               const at::Tensor& scratch) {
  check_master_adamw_args(s, false);
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (master_adamw_uses_cuda(s)) return cuda::grad_norm(s, max_norm, norm, coef, scratch);
#endif
  (void)scratch;
  composite::grad_norm(s, max_norm, norm, coef);
}

void master_adamw(const MasterAdamW& s, const at::Tensor& coef) {
  check_master_adamw_args(s, true);
#if HPCBENCH_CUDA_KERNELS_BUILT
  if (master_adamw_uses_cuda(s)) return cuda::master_adamw(s, coef);
#endif
  composite::master_adamw(s, coef);
}

}  // namespace hpcbench::kernels
