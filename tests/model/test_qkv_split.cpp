// HPCBENCH_QKV_GRAD=packed (model/qkv_split.h): the packed QKV gradient
// written in one copy. On fp32 CPU the arithmetic is autograd's (copies
// only), so every gradient equals the autograd split's exactly; and the
// backward allocates exactly one [b, s, 3h] buffer less per layer, counted by
// a CPU allocator.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "counting_allocator.h"
#include "model/bert.h"
#include "model/qkv_split.h"

using namespace hpcbench;

namespace {

struct Grads {
  std::vector<at::Tensor> grads;
  int64_t backward_bytes = 0;  // allocated during backward
};

// The split alone, through SDPA as the model calls it, with a padding mask.
Grads split_through_sdpa(bool packed, int64_t b, int64_t s, int64_t heads, int64_t d) {
  model::set_qkv_packed_grad(packed);
  torch::manual_seed(5);
  auto x = torch::randn({b, s, 3 * heads * d}).requires_grad_(true);
  auto mask = torch::zeros({b, 1, 1, s});
  mask.narrow(3, s - 3, 3).fill_(-1e30);
  std::array<at::Tensor, 3> qkv;
  if (packed) {
    qkv = model::split_qkv_packed_grad(x, heads, d);
  } else {
    auto u = x.view({b, s, 3, heads, d}).permute({2, 0, 3, 1, 4}).unbind(0);
    qkv = {u[0], u[1], u[2]};
  }
  auto o = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], mask, 0.0, false, 0.25);
  auto dy = torch::randn(o.sizes());
  auto& alloc = test::counting();
  const int64_t before = alloc.allocated_total();
  auto g = torch::autograd::grad({o}, {x}, {dy});
  return {{g[0]}, alloc.allocated_total() - before};
}

// A fused bert-tiny-shaped model, fp32, dropout 0: every parameter's gradient.
Grads model_grads(bool packed, int64_t b, int64_t s) {
  model::set_qkv_packed_grad(packed);
  auto cfg = model::BertConfig::preset("bert-tiny");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0;
  torch::manual_seed(11);
  EnginePolicy fused;  // --fused's model: packed QKV and the fused kernels
  fused.kernels = EnginePolicy::Kernels::Fused;
  fused.qkv = EnginePolicy::Qkv::Packed;
  model::BertForQuestionAnswering m(cfg, fused);
  m->train();
  torch::manual_seed(3);
  auto ids = torch::randint(1000, {b, s});
  auto types = torch::zeros({b, s}, torch::kLong);
  auto attn = torch::ones({b, s}, torch::kLong);
  attn.narrow(1, s - 5, 5).zero_();
  auto start = torch::randint(s, {b}), end = torch::randint(s, {b});
  auto out = m->forward(ids, types, attn, start, end);
  auto& alloc = test::counting();
  const int64_t before = alloc.allocated_total();
  out.loss.backward();
  Grads g;
  g.backward_bytes = alloc.allocated_total() - before;
  for (auto& p : m->parameters()) g.grads.push_back(p.grad().clone());
  return g;
}

}  // namespace

TEST_CASE("the packed QKV split's gradient equals autograd's exactly, with one copy fewer") {
  const int64_t b = 2, s = 16, heads = 4, d = 8;
  auto autograd = split_through_sdpa(false, b, s, heads, d);
  auto packed = split_through_sdpa(true, b, s, heads, d);
  model::set_qkv_packed_grad(false);
  CHECK(at::equal(packed.grads[0], autograd.grads[0]));
  CHECK(packed.grads[0].is_contiguous());
  INFO("backward allocated " << autograd.backward_bytes << " bytes (autograd's split) and " << packed.backward_bytes
                             << " (packed)");
  CHECK(autograd.backward_bytes - packed.backward_bytes == b * s * 3 * heads * d * 4);
}

TEST_CASE("the fused model's gradients with HPCBENCH_QKV_GRAD=packed equal autograd's split exactly") {
  const int64_t b = 2, s = 24;
  auto autograd = model_grads(false, b, s);
  auto packed = model_grads(true, b, s);
  model::set_qkv_packed_grad(false);
  REQUIRE(autograd.grads.size() == packed.grads.size());
  for (size_t i = 0; i < autograd.grads.size(); ++i) {
    INFO("parameter " << i);
    CHECK(at::equal(packed.grads[i], autograd.grads[i]));
  }
  const auto cfg = model::BertConfig::preset("bert-tiny");
  // One [b, s, 3h] fp32 buffer less per layer.
  CHECK(autograd.backward_bytes - packed.backward_bytes ==
        cfg.num_hidden_layers * b * s * 3 * cfg.hidden_size * 4);
}
