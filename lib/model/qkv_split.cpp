#include "model/qkv_split.h"

#include <torch/csrc/autograd/custom_function.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace hpcbench::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct QkvSplit : torch::autograd::Function<QkvSplit> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& packed, int64_t heads, int64_t head_dim) {
    const int64_t b = packed.size(0), s = packed.size(1);
    ctx->saved_data["b"] = b;
    ctx->saved_data["s"] = s;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["head_dim"] = head_dim;
    // The same strided views as autograd's split (bert_modules.cpp): SDPA
    // takes them without a copy.
    auto parts = packed.view({b, s, 3, heads, head_dim}).permute({2, 0, 3, 1, 4}).unbind(0);
    return {parts[0], parts[1], parts[2]};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t b = ctx->saved_data["b"].toInt(), s = ctx->saved_data["s"].toInt();
    const int64_t heads = ctx->saved_data["heads"].toInt(), d = ctx->saved_data["head_dim"].toInt();
    at::TensorOptions options;
    for (const auto& g : grads)
      if (g.defined()) options = g.options();
    std::vector<at::Tensor> parts;
    for (auto& g : grads)  // [b, heads, s, d] -> [b, s, heads, d] views; a missing one is zero
      parts.push_back(g.defined() ? g.transpose(1, 2) : at::zeros({b, s, heads, d}, options));
    // Stacked on dim 2 the result is [b, s, 3, heads, d] contiguous: the
    // packed gradient, written once.
    return {at::stack(parts, 2).view({b, s, 3 * heads * d}), at::Tensor(), at::Tensor()};
  }
};

int initial_setting() {
  const char* v = std::getenv("HPCBENCH_QKV_GRAD");
  const std::string s = v ? v : "";
  if (s.empty() || s == "autograd") return 0;
  if (s == "packed") return 1;
  fail("HPCBENCH_QKV_GRAD={}: use packed or autograd", s);
}

std::atomic<int> g_packed{-1};

}  // namespace

std::array<at::Tensor, 3> split_qkv_packed_grad(const at::Tensor& packed, int64_t heads, int64_t head_dim) {
  auto out = QkvSplit::apply(packed, heads, head_dim);
  return {out[0], out[1], out[2]};
}

bool qkv_packed_grad() {
  int v = g_packed.load(std::memory_order_relaxed);
  if (v < 0) g_packed = v = initial_setting();
  return v == 1;
}

void set_qkv_packed_grad(bool on) { g_packed = on ? 1 : 0; }

}  // namespace hpcbench::model
