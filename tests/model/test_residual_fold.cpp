// The residual gradient folded into the branch's GEMM (model/residual_fold.h,
// on by default under --fused; --no-residual-fold turns it off). The weight's
// and bias's gradients are at::linear's bit for bit; x's is the same sum
// rounded once instead of twice, so it is held to the exact sum (float64)
// within fp32's rounding bound, a bound that the wrong folds (the residual's
// gradient dropped, or the branch's added twice) fail. In the fused model
// every gradient stays within a stated tolerance of autograd's add, the loss
// is the same bit for bit, and the backward allocates exactly one [b, s, h]
// tensor less per residual join (two a layer), counted by a CPU allocator.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "counting_allocator.h"
#include "model/bert.h"
#include "model/bert_modules.h"
#include "model/residual_fold.h"

using namespace hpcbench;

namespace {

// |a - ref| <= bound elementwise; returns the number of elements over it.
int64_t over_bound(const at::Tensor& a, const at::Tensor& ref, const at::Tensor& bound) {
  return (a.to(at::kDouble) - ref).abs().gt(bound).sum().item<int64_t>();
}

struct LinearGrads {
  at::Tensor out, dx, dw, db;
};

LinearGrads linear_grads(bool fold, const at::Tensor& x0, const at::Tensor& w0, const at::Tensor& b0,
                         const at::Tensor& dy, const at::Tensor& dres) {
  auto x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
  at::Tensor out, residual;
  if (fold) {
    auto f = model::linear_folding_residual(x, w, b);
    out = f.out;
    residual = f.residual;
  } else {
    out = at::linear(x, w, b);
    residual = x;
  }
  // Products with fixed tensors, so that the gradients reaching the join
  // are tensors of the backward's own (as the LayerNorm's are in the model).
  auto loss = (out * dy).sum() + (residual * dres).sum();
  auto g = torch::autograd::grad({loss}, {x, w, b});
  return {out.detach(), g[0], g[1], g[2]};
}

struct ModelRun {
  at::Tensor loss;
  std::vector<at::Tensor> grads;
  int64_t backward_bytes = 0;
};

ModelRun fused_model(EnginePolicy::Residual residual, double dropout, bool recompute, int64_t b, int64_t s) {
  auto cfg = model::BertConfig::preset("bert-tiny");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = dropout;
  torch::manual_seed(11);
  EnginePolicy fused;  // --fused's model
  fused.kernels = EnginePolicy::Kernels::Fused;
  fused.qkv = EnginePolicy::Qkv::Packed;
  fused.residual = residual;
  model::BertForQuestionAnswering m(cfg, fused);
  m->bert()->set_activation_checkpointing(recompute);
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
  ModelRun r;
  r.backward_bytes = alloc.allocated_total() - before;
  r.loss = out.loss.detach();
  for (auto& p : m->parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

}  // namespace

TEST_CASE("the folded linear: dW and db as at::linear's bit for bit, dX the exact sum within rounding") {
  torch::manual_seed(7);
  const int64_t k = 16, n = 24;
  auto x = torch::randn({3, 7, k}), w = torch::randn({n, k}), b = torch::randn({n});
  auto dy = torch::randn({3, 7, n}), dres = torch::randn({3, 7, k});
  auto folded = linear_grads(true, x, w, b, dy, dres);
  auto added = linear_grads(false, x, w, b, dy, dres);
  CHECK(at::equal(folded.out, added.out));
  CHECK(at::equal(folded.dw, added.dw));
  CHECK(at::equal(folded.db, added.db));

  // dX = dres + dY W, exactly in float64; fp32's bound for a sum of n
  // products and one more addition: (n + 2) u (|dres| + |dY| |W|).
  auto dy64 = dy.to(at::kDouble).reshape({-1, n}), w64 = w.to(at::kDouble), dres64 = dres.to(at::kDouble);
  auto branch = dy64.mm(w64).view(x.sizes());
  auto exact = dres64 + branch;
  auto bound = (dres64.abs() + dy64.abs().mm(w64.abs()).view(x.sizes())) * ((n + 2) * std::ldexp(1.0, -24));
  CHECK(over_bound(folded.dx, exact, bound) == 0);
  CHECK(over_bound(added.dx, exact, bound) == 0);
  // The same check fails the wrong folds, every element of them or nearly.
  const int64_t all = x.numel();
  CHECK(over_bound(branch, exact, bound) > all * 9 / 10);         // the residual's gradient dropped (beta = 0)
  CHECK(over_bound(dres64, exact, bound) > all * 9 / 10);         // the branch's dropped
  CHECK(over_bound(exact + branch, exact, bound) > all * 9 / 10);  // the branch's added twice
  CHECK(over_bound(exact + dres64, exact, bound) > all * 9 / 10);  // the residual's added twice
}

TEST_CASE("the folded linear leaves a gradient that others hold as it was") {
  // grad_outputs the caller keeps: the fold must not write into them.
  torch::manual_seed(8);
  auto x = torch::randn({2, 5, 8}).requires_grad_(true), w = torch::randn({12, 8}).requires_grad_(true);
  auto f = model::linear_folding_residual(x, w, {});
  auto dy = torch::randn({2, 5, 12}), dres = torch::randn({2, 5, 8});
  const auto kept = dres.clone();
  auto g = torch::autograd::grad({f.out, f.residual}, {x}, {dy, dres});
  CHECK(at::equal(dres, kept));
  CHECK(at::allclose(g[0], kept + dy.reshape({-1, 12}).mm(w.detach()).view({2, 5, 8}), 1e-6, 1e-6));
}

TEST_CASE("the fused model with the fold: the same loss, gradients within 1e-4, two [b, s, h] tensors fewer a layer") {
  const int64_t b = 2, s = 24;
  const auto cfg = model::BertConfig::preset("bert-tiny");
  for (double dropout : {0.0, 0.1}) {
    for (bool recompute : {false, true}) {
      INFO("dropout " << dropout << ", activation checkpointing " << recompute);
      auto added = fused_model(EnginePolicy::Residual::Added, dropout, recompute, b, s);
      auto folded = fused_model(EnginePolicy::Residual::Folded, dropout, recompute, b, s);
      CHECK(at::equal(folded.loss, added.loss));
      REQUIRE(folded.grads.size() == added.grads.size());
      // Element-wise against the scale of each parameter's gradient: the one
      // rounding of each join's sum, carried back through the layers below.
      for (size_t i = 0; i < added.grads.size(); ++i) {
        INFO("parameter " << i);
        const auto& ref = added.grads[i];
        auto scale = ref.abs() + ref.square().mean().sqrt();
        const double worst = ((folded.grads[i] - ref).abs() / scale).max().item<double>();
        CHECK(worst <= 1e-4);  // measured: 3.4e-5 at worst (bert-tiny, fp32)
      }
      if (!recompute) {
        // fp32: one [b, s, h] gradient a join not allocated, two joins a layer.
        CHECK(added.backward_bytes - folded.backward_bytes == cfg.num_hidden_layers * 2 * b * s * cfg.hidden_size * 4);
      }
    }
  }
}
