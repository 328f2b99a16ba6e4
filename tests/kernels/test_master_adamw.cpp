// The master-weight AdamW step's composite (kernels/master_adamw.h), the
// semantics its CUDA kernel shares, against LibTorch's own
// torch::nn::utils::clip_grad_norm_ and torch::optim::AdamW (torch.optim.AdamW's
// op-by-op arithmetic) stepping fp32 copies of the parameters on the fp32
// values of the same bf16 gradients: a separate implementation, not our
// earlier output. bench_kernels checks the kernel against this composite
// element by element on a GPU.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <vector>

#include "kernels/master_adamw.h"

namespace K = hpcbench::kernels;

namespace {

// Element by element: |a - b| <= kAbs + kRel |b|. Both sides compute in
// fp32 (unit roundoff 6e-8) in another order (x -= lr wd x against x *= 1 -
// lr wd; m b1 + (1 - b1) g fused or not), so each step leaves a few units of
// roundoff of the value in each of master, m and v, five steps some ten:
// kRel = 1e-6, and kAbs = 1e-6 for masters near zero. One step's update
// (lr = 1e-2 times an Adam ratio near 1) is 1e4 kAbs, a decay term (lr wd
// |x| ~ 1e-4) 1e2 kAbs, a missing bias correction a factor of ten on the
// update: any wrong formula fails by orders of magnitude.
constexpr double kAbs = 1e-6, kRel = 1e-6;

double worst(const at::Tensor& a, const at::Tensor& b) {
  auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  return ((a64 - b64).abs() / (kAbs + kRel * b64.abs())).max().item<double>();
}

struct Case {
  std::vector<std::vector<int64_t>> shapes{{37}, {5, 7}, {1}, {3, 4}};
  std::vector<int> groups{0, 1, 0, 1};
  std::vector<double> weight_decay{0.01, 0.0};
  double max_norm = 1.0;
  bool lr_tensor = true;  // group 0's rate a device tensor (as under a graph), group 1's a value
};

// Five steps of both, with a new bf16 gradient and rate each step; the
// worst element of master, m, v against the reference (in tolerance units),
// and the norms.
void run_case(const Case& c) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(41);
  std::vector<at::Tensor> ref;
  int64_t numel = 0;
  std::vector<int64_t> offsets;
  for (const auto& s : c.shapes) {
    ref.push_back(at::randn(s, gen).requires_grad_(true));
    offsets.push_back(numel);
    numel += ref.back().numel();
  }
  std::vector<at::Tensor> flat_parts;
  for (auto& r : ref) flat_parts.push_back(r.detach().reshape({-1}));
  K::MasterAdamW s;
  s.offsets = offsets;
  s.groups = c.groups;
  s.numel = numel;
  // One padding element past the parameters: the step must leave it alone.
  s.master = at::cat({at::cat(flat_parts), at::full({1}, 7.0)});
  s.exp_avg = at::zeros({numel + 1});
  s.exp_avg_sq = at::zeros({numel + 1});
  s.weight = s.master.to(at::kBFloat16);
  s.step = at::zeros({1});
  s.weight_decay = c.weight_decay;
  s.lr = {c.lr_tensor ? at::zeros({}, at::kDouble) : at::Tensor(), at::Tensor()};
  s.lr_value = {0.0, 0.0};

  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (size_t g = 0; g < c.weight_decay.size(); ++g) {
    std::vector<at::Tensor> ps;
    for (size_t k = 0; k < ref.size(); ++k)
      if (c.groups[k] == static_cast<int>(g)) ps.push_back(ref[k]);
    groups.emplace_back(ps, std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(1e-2).weight_decay(c.weight_decay[g])));
  }
  torch::optim::AdamW opt(groups, torch::optim::AdamWOptions(1e-2));
  auto norm = at::zeros({1}), coef = at::zeros({1});
  for (int step = 1; step <= 5; ++step) {
    INFO("step " << step);
    const double lr = 1e-2 * (1.0 - 0.1 * step);
    for (auto& g : opt.param_groups()) g.options().set_lr(lr);
    if (s.lr[0].defined()) s.lr[0].fill_(lr);
    s.lr_value = {s.lr[0].defined() ? 0.0 : lr, lr};
    s.grads.clear();
    for (auto& r : ref) {
      // Scaled up so that the clip engages where max_norm is 1.
      auto g = (3.0 * at::randn(r.sizes(), gen)).to(at::kBFloat16);
      s.grads.push_back(g);
      r.mutable_grad() = g.to(at::kFloat);
    }
    const double want_norm = torch::nn::utils::clip_grad_norm_(ref, c.max_norm);
    K::composite::grad_norm(s, c.max_norm, norm, coef);
    CHECK(std::abs(norm.item<double>() - want_norm) <= 1e-6 * want_norm);
    opt.step();
    s.step.add_(1);
    K::composite::master_adamw(s, coef);
    for (size_t k = 0; k < ref.size(); ++k) {
      INFO("parameter " << k);
      auto& st = static_cast<torch::optim::AdamWParamState&>(*opt.state().at(ref[k].unsafeGetTensorImpl()));
      const auto n = ref[k].numel();
      CHECK(worst(s.master.narrow(0, offsets[k], n), ref[k].detach().reshape({-1})) <= 1.0);
      CHECK(worst(s.exp_avg.narrow(0, offsets[k], n), st.exp_avg().reshape({-1})) <= 1.0);
      CHECK(worst(s.exp_avg_sq.narrow(0, offsets[k], n), st.exp_avg_sq().reshape({-1})) <= 1.0);
    }
    // The weights are the master rounded to bf16 (ATen's round to nearest
    // even), the padding untouched in every flat.
    CHECK(at::equal(s.weight.narrow(0, 0, numel), s.master.narrow(0, 0, numel).to(at::kBFloat16)));
    CHECK(s.master[numel].item<float>() == 7.0f);
    CHECK(s.exp_avg[numel].item<float>() == 0.0f);
    CHECK(s.weight[numel].item<float>() == 7.0f);
  }
}

}  // namespace

TEST_CASE("master AdamW composite: clip engaged, two groups, a tensor rate, against torch::optim::AdamW",
          "[kernels][adamw]") {
  Case c;
  run_case(c);
}

TEST_CASE("master AdamW composite: clip not engaged, rates as values", "[kernels][adamw]") {
  Case c;
  c.max_norm = 1e6;
  c.lr_tensor = false;
  run_case(c);
}

TEST_CASE("master AdamW composite: the tolerance separates a step from none", "[kernels][adamw]") {
  // The check above can fail: a master that missed one step's update (or
  // its decay alone) is far outside it.
  auto x = at::randn({64});
  auto stepped = x - 1e-2 * at::sign(at::randn({64}));
  CHECK(worst(x, stepped) > 1e3);
  CHECK(worst(x, x * (1 - 1e-2 * 0.01)) > 10.0);
}

TEST_CASE("master AdamW: the dispatcher takes the composite on CPU tensors and checks its arguments",
          "[kernels][adamw]") {
  K::MasterAdamW s;
  s.grads = {at::ones({4}, at::kBFloat16)};
  s.offsets = {0};
  s.groups = {0};
  s.numel = 4;
  s.master = at::zeros({4});
  s.exp_avg = at::zeros({4});
  s.exp_avg_sq = at::zeros({4});
  s.weight = at::zeros({4}, at::kBFloat16);
  s.step = at::ones({1});
  s.weight_decay = {0.0};
  s.lr_value = {0.5};
  CHECK_FALSE(K::master_adamw_uses_cuda(s));
  CHECK(K::grad_norm_scratch(s) == 0);
  auto norm = at::zeros({1}), coef = at::zeros({1});
  K::grad_norm(s, 1.0, norm, coef, at::Tensor());
  CHECK(norm.item<float>() == 2.0f);
  CHECK(coef.item<float>() == Approx(1.0 / (2.0 + 1e-6)).epsilon(1e-6));
  // Step 1 with g = 1/2 everywhere: m = 0.05, v = 0.00025, bias-corrected
  // m / sqrt(v) = 1, so each master moves by the rate.
  K::master_adamw(s, coef);
  CHECK(s.master[0].item<float>() == Approx(-0.5).epsilon(1e-5));
  s.groups = {1};
  CHECK_THROWS_WITH(K::master_adamw(s, coef), Catch::Matchers::Contains("group 1 has no rate"));
}
