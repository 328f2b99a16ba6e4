#pragma once
// The fused model's packed QKV projection output [b, s, 3h] as three
// [b, heads, s, d] views for SDPA, with a backward that writes dq, dk and dv
// into one packed [b, s, 3h] gradient in a single copy. Autograd's own
// backward of view -> permute -> unbind stacks the three gradients
// ([3, b, heads, s, d]) and then copies the permuted stack once more to make
// the view's gradient contiguous: two copies of 3bsh elements per layer
// where one does. Opt-in for an A/B on a GPU: HPCBENCH_QKV_GRAD=packed.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace hpcbench::model {

std::array<at::Tensor, 3> split_qkv_packed_grad(const at::Tensor& packed, int64_t heads, int64_t head_dim);

// Whether the fused model splits its QKV output with split_qkv_packed_grad:
// HPCBENCH_QKV_GRAD=packed, read once ("autograd" or unset: autograd's
// split; anything else is refused naming the variable). The setter is for
// tests that compare both in one process.
bool qkv_packed_grad();
void set_qkv_packed_grad(bool on);

}  // namespace hpcbench::model
