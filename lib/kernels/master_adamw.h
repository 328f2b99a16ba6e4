#pragma once
// The master-weight AdamW step of --fused under bf16: the gradient norm read
// from the compute-dtype (bf16) gradients, then AdamW on the flat fp32
// master, m and v with the clip coefficient taken from the device, and the
// weights the model computes with written from the master. As fused.h, a
// CUDA kernel (master_adamw.cu: two launches for the norm, one for the
// update, nothing allocated, nothing read by the host, so that a CUDA graph
// can hold it) and an ATen composite of the same semantics (namespace
// composite): the CPU path, and the reference bench_kernels checks the kernel
// against element by element.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace hpcbench::kernels {

// A flat of parameters laid end to end and what the step reads and writes.
struct MasterAdamW {
  // Per parameter: its gradient in the compute dtype (undefined: zeros), its
  // offset in the flats, its optimizer group.
  std::vector<at::Tensor> grads;
  std::vector<int64_t> offsets;
  std::vector<int> groups;
  int64_t numel = 0;  // the parameters' elements; the flats may be longer (padding, untouched)
  // fp32 flats, updated in place; `weight` (compute dtype) written.
  at::Tensor master, exp_avg, exp_avg_sq, weight;
  // Per group: its rate as a one-element fp32 tensor on the device (read
  // when the step runs: a graph's replay takes the current one), or where
  // that is undefined the value; its decoupled weight decay.
  std::vector<at::Tensor> lr;
  std::vector<double> lr_value;
  std::vector<double> weight_decay;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // One fp32 element on the device: the step count, this step's included
  // (the caller increments it first, as torch.optim.AdamW does).
  at::Tensor step;
};

// The norm of the gradients (fp32 sums of squares of their compute-dtype
// values, as clip_grad_norm_ over their fp32 copies) into `norm`, and
// min(1, max_norm / (norm + 1e-6)) into `coef` (one fp32 element each, on
// the device). `scratch`: fp32, at least grad_norm_scratch(s) elements.
void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef,
               const at::Tensor& scratch);
int64_t grad_norm_scratch(const MasterAdamW& s);
// torch.optim.AdamW's update of every parameter (decoupled weight decay,
// bias correction from `step`) on its gradient times `coef` (undefined: 1),
// then weight[0, numel) = master rounded to its dtype.
void master_adamw(const MasterAdamW& s, const at::Tensor& coef);
// Whether master_adamw and grad_norm take the CUDA kernel for `s`.
bool master_adamw_uses_cuda(const MasterAdamW& s);

namespace composite {
void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef);
void master_adamw(const MasterAdamW& s, const at::Tensor& coef);
}  // namespace composite

}  // namespace hpcbench::kernels
