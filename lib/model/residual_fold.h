#pragma once
// A residual join's gradient accumulated by the branch's GEMM. In a BERT
// layer the same tensor x feeds a linear (the QKV projection, the FFN's first
// dense) and, as the residual, the LayerNorm after the branch. Autograd
// computes x's gradient from the linear as a new tensor (dY W) and then adds
// the residual's gradient to it in a separate kernel: a GEMM writing one
// activation-sized tensor, then an add reading two and writing one. Here the
// linear and the residual's alias are one autograd Function, so that its
// backward receives both gradients and writes dX = dresidual + dY W with one
// GEMM of beta = 1 into the residual's gradient: read and written once, no
// second tensor, no add. The same ATen code on every device (cuBLAS on a GPU,
// the CPU's BLAS here), so the CPU runs what the GPU runs.
//
// The weight's and the bias's gradients are computed as autograd computes
// at::linear's, bit for bit; x's is the same sum rounded once instead of
// twice (a tolerance, not bit for bit: test_residual_fold).
#include <ATen/core/Tensor.h>

namespace hpcbench::model {

struct FoldedLinear {
  at::Tensor out;       // at::linear(x, weight, bias), bit for bit
  at::Tensor residual;  // x, to be used as the residual of the join
};

// out = x Wᵀ (+ bias), and x again as the residual whose gradient the GEMM
// accumulates into. Falls back to at::linear and x itself (autograd's add)
// where the fold does not apply: no gradient wanted for x, autocast on (the
// GEMM would run in another dtype than the residual's gradient), or a
// weight in another dtype than x.
FoldedLinear linear_folding_residual(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace hpcbench::model
