// The fused kernels' ATen composites (lib/kernels) against the unfused
// modules the model uses today and against a float64 evaluation of the
// formulas, forward and backward, fp32 and bf16; and the dispatcher on CPU
// tensors. The CUDA kernels themselves are checked against these composites
// by bench/bench_kernels on a GPU.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>

#include <cmath>
#include <map>
#include <string>

#include "kernels/fused.h"

using namespace hpcbench;
namespace K = hpcbench::kernels;

namespace {

using Grads = std::map<std::string, at::Tensor>;

// max |a - b| / max |b|: the error relative to the tensor's scale, so that
// elements near zero (where any rounding is a large relative error) do not
// decide, and a wrong formula (tanh GELU: up to 1.2e-4 of the scale; a
// missing dropout scale or bias: order 1) does.
double scaled_error(const at::Tensor& a, const at::Tensor& b) {
  REQUIRE(a.defined());
  REQUIRE(b.defined());
  REQUIRE(a.sizes() == b.sizes());
  auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  double scale = b64.abs().max().item<double>();
  return (a64 - b64).abs().max().item<double>() / std::max(scale, 1e-30);
}

// Tolerances against float64. fp32: unit roundoff 6e-8, grown by the sums
// over n = 64 columns (mean, variance, the two row sums of the LayerNorm
// backward) and over the rows (bias and weight gradients): 1e-5 leaves a
// margin of about 10x and still catches the tanh GELU (1.2e-4). bf16 (8-bit
// mantissa, unit roundoff 2^-9 = 0.002): the unfused path rounds x + bias,
// the dropout, the residual sum and the output, so up to about four roundings
// of one element's value reach the result; 2^-6 = 0.016 bounds that.
double tolerance(at::ScalarType t) { return t == at::kBFloat16 ? 1.0 / 64 : 1e-5; }

struct Inputs {
  at::Tensor x, bias, residual, weight, ln_bias, dy;
};

Inputs make_inputs(at::IntArrayRef shape, at::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto opt = at::TensorOptions().dtype(at::kFloat);
  const int64_t n = shape.back();
  Inputs in;
  in.x = at::randn(shape, gen, opt).to(dtype);
  in.bias = (0.5 * at::randn({n}, gen, opt)).to(dtype);
  in.residual = at::randn(shape, gen, opt).to(dtype);
  in.weight = (1 + 0.2 * at::randn({n}, gen, opt)).to(dtype);
  in.ln_bias = (0.1 * at::randn({n}, gen, opt)).to(dtype);
  in.dy = at::randn(shape, gen, opt).to(dtype);
  return in;
}

at::Tensor leaf(const at::Tensor& t, at::ScalarType dtype) { return t.detach().to(dtype).requires_grad_(true); }

// Runs fn on fresh leaves (of `dtype`) of the inputs, back-propagates dy and
// returns the output and the five gradients.
template <typename Fn>
Grads run_layernorm(const Inputs& in, at::ScalarType dtype, Fn fn) {
  auto x = leaf(in.x, dtype), b = leaf(in.bias, dtype), r = leaf(in.residual, dtype), w = leaf(in.weight, dtype),
       lb = leaf(in.ln_bias, dtype);
  at::Tensor y = fn(x, b, r, w, lb);
  y.backward(in.dy.to(dtype));
  return {{"out", y.detach()}, {"x", x.grad()}, {"bias", b.grad()}, {"residual", r.grad()},
          {"weight", w.grad()}, {"ln_bias", lb.grad()}};
}

template <typename Fn>
Grads run_gelu(const Inputs& in, at::ScalarType dtype, Fn fn) {
  auto x = leaf(in.x, dtype), b = leaf(in.bias, dtype);
  at::Tensor y = fn(x, b);
  y.backward(in.dy.to(dtype));
  return {{"out", y.detach()}, {"x", x.grad()}, {"bias", b.grad()}};
}

void compare(const Grads& got, const Grads& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, t] : want) {
    double e = scaled_error(got.at(name), t);
    INFO(name << ": scaled error " << e << ", tolerance " << tol);
    CHECK(e <= tol);
  }
}

// The formulas, in float64, written out rather than called: erf GELU, and
// LayerNorm as (z - mean) / sqrt(biased variance + eps) * weight + ln_bias.
at::Tensor gelu_f64(const at::Tensor& x, const at::Tensor& b) {
  auto u = x + b;
  return 0.5 * u * (1 + at::erf(u / std::sqrt(2.0)));
}
at::Tensor layernorm_f64(const at::Tensor& h, const at::Tensor& r, const at::Tensor& w, const at::Tensor& lb,
                         double eps) {
  auto z = h + r;
  auto mean = z.mean(-1, true);
  auto var = (z - mean).pow(2).mean(-1, true);
  return (z - mean) / at::sqrt(var + eps) * w + lb;
}

constexpr double kEps = 1e-12;  // BERT's layer_norm_eps
const std::vector<int64_t> kShape{2, 24, 64};

}  // namespace

TEST_CASE("composite bias_gelu equals x + bias then the erf GELU module, and the float64 formula") {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO("dtype " << c10::toString(dtype));
    Inputs in = make_inputs(kShape, dtype, 1);
    Grads got = run_gelu(in, dtype, [](auto& x, auto& b) { return K::composite::bias_gelu(x, b); });
    torch::nn::GELU gelu(torch::nn::GELUOptions().approximate("none"));
    Grads unfused = run_gelu(in, dtype, [&](auto& x, auto& b) { return gelu(x + b); });
    // The same operations in the same order: equal up to nothing.
    compare(got, unfused, 0.0);
    Grads f64 = run_gelu(in, at::kDouble, gelu_f64);
    compare(got, f64, tolerance(dtype));
  }
}

TEST_CASE("composite bias_gelu is the erf GELU, not the tanh approximation") {
  // Where the two differ most (|u| near 2, by about 3e-4 there), fp32 tells them apart.
  auto u = at::linspace(-4, 4, 801, at::kFloat);
  auto erf_gelu = K::composite::bias_gelu(u, at::zeros({801}));
  CHECK(scaled_error(erf_gelu, at::gelu(u, "tanh")) > 3e-5);
  CHECK(scaled_error(erf_gelu, gelu_f64(u.to(at::kDouble), at::zeros({801}, at::kDouble))) < 1e-6);
}

TEST_CASE("composite bias_dropout_add_layernorm without dropout equals the unfused modules and the formula") {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (bool training : {false, true}) {
      // p > 0 outside training and p = 0 in training both mean no dropout.
      const double p = training ? 0.0 : 0.1;
      INFO("dtype " << c10::toString(dtype) << ", training " << training);
      Inputs in = make_inputs(kShape, dtype, 2);
      Grads got = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return K::composite::bias_dropout_add_layernorm(x, b, r, w, lb, p, kEps, training);
      });
      torch::nn::Dropout dropout(p);
      training ? dropout->train() : dropout->eval();
      Grads unfused = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return torch::nn::functional::layer_norm(
            dropout(x + b) + r, torch::nn::functional::LayerNormFuncOptions({kShape.back()}).weight(w).bias(lb).eps(kEps));
      });
      compare(got, unfused, 0.0);
      Grads f64 = run_layernorm(in, at::kDouble, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return layernorm_f64(x + b, r, w, lb, kEps);
      });
      compare(got, f64, tolerance(dtype));
    }
  }
}

TEST_CASE("composite bias_dropout_add_layernorm with dropout equals the unfused modules with the same mask") {
  const double p = 0.25;
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO("dtype " << c10::toString(dtype));
    Inputs in = make_inputs(kShape, dtype, 3);
    torch::nn::Dropout dropout(p);
    auto ln_opts = torch::nn::functional::LayerNormFuncOptions({kShape.back()}).eps(kEps);

    // The same generator state: the composite draws its mask as at::dropout does.
    at::manual_seed(11);
    K::MaskedOutput masked{};
    Grads got = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
      masked = K::composite::bias_dropout_add_layernorm_with_mask(x, b, r, w, lb, p, kEps, true);
      return masked.out;
    });
    at::manual_seed(11);
    Grads unfused = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
      return torch::nn::functional::layer_norm(dropout(x + b) + r, ln_opts.weight(w).bias(lb));
    });
    compare(got, unfused, 0.0);

    // The mask it reports is the one at::dropout applied: the same draws
    // applied to ones (not read off `dropped`: in bf16, x + bias is exactly 0
    // for a few elements, which would look dropped) ...
    REQUIRE(masked.keep_mask.defined());
    CHECK(masked.keep_mask.scalar_type() == at::kBool);
    at::manual_seed(11);
    CHECK(at::equal(masked.keep_mask, dropout(at::ones_like(in.x)) != 0));
    const double kept = masked.keep_mask.to(at::kDouble).mean().item<double>();
    // ... and keeps 1 - p of 3072 elements: within 5 standard deviations (0.039).
    CHECK(std::abs(kept - (1 - p)) < 5 * std::sqrt(p * (1 - p) / 3072.0));

    // Given that mask, with another generator state, the result is the same.
    at::manual_seed(12345);
    Grads given = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
      return K::composite::bias_dropout_add_layernorm(x, b, r, w, lb, p, kEps, true, masked.keep_mask);
    });
    compare(given, unfused, 0.0);

    // And the float64 formula with that mask (the dropout's 1 / (1 - p) scale
    // included: without it the error is of order 1).
    auto mask64 = masked.keep_mask.to(at::kDouble);
    Grads f64 = run_layernorm(in, at::kDouble, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
      return layernorm_f64((x + b) * mask64 / (1 - p), r, w, lb, kEps);
    });
    compare(got, f64, tolerance(dtype));
  }
}

TEST_CASE("undefined bias, weight and LayerNorm bias mean no bias, weight 1 and LayerNorm bias 0") {
  Inputs in = make_inputs({3, 5, 30}, at::kFloat, 4);
  auto got = K::composite::bias_dropout_add_layernorm(in.x, {}, in.residual, {}, {}, 0.0, 1e-5, false);
  auto want = layernorm_f64(in.x.to(at::kDouble), in.residual.to(at::kDouble), at::ones({30}, at::kDouble),
                            at::zeros({30}, at::kDouble), 1e-5);
  CHECK(scaled_error(got, want) < tolerance(at::kFloat));
  CHECK(scaled_error(K::composite::bias_gelu(in.x, {}), gelu_f64(in.x.to(at::kDouble), at::zeros({30}, at::kDouble))) <
        tolerance(at::kFloat));
}

TEST_CASE("parameters of another dtype are cast to x's: the output keeps x's dtype, gradients the parameters'") {
  Inputs in = make_inputs(kShape, at::kBFloat16, 5);
  auto w = in.weight.to(at::kFloat).requires_grad_(true);
  auto b = in.bias.to(at::kFloat).requires_grad_(true);
  auto x = in.x.detach().requires_grad_(true);
  auto y = K::bias_dropout_add_layernorm(x, b, in.residual, w, in.ln_bias, 0.0, kEps, true);
  CHECK(y.scalar_type() == at::kBFloat16);
  y.backward(in.dy);
  CHECK(w.grad().scalar_type() == at::kFloat);
  CHECK(b.grad().scalar_type() == at::kFloat);
  auto g = K::bias_gelu(x, b);
  CHECK(g.scalar_type() == at::kBFloat16);
}

TEST_CASE("the dispatcher on CPU tensors returns the composite's result") {
  CHECK_FALSE(K::uses_cuda_kernels(at::zeros({2, 8})));
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO("dtype " << c10::toString(dtype));
    Inputs in = make_inputs(kShape, dtype, 6);
    compare(run_gelu(in, dtype, [](auto& x, auto& b) { return K::bias_gelu(x, b); }),
            run_gelu(in, dtype, [](auto& x, auto& b) { return K::composite::bias_gelu(x, b); }), 0.0);
    for (double p : {0.0, 0.1}) {
      INFO("p " << p);
      at::manual_seed(21);
      K::MaskedOutput d{};
      Grads dispatched = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        d = K::bias_dropout_add_layernorm_with_mask(x, b, r, w, lb, p, kEps, true);
        return d.out;
      });
      at::manual_seed(21);
      K::MaskedOutput c{};
      Grads comp = run_layernorm(in, dtype, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        c = K::composite::bias_dropout_add_layernorm_with_mask(x, b, r, w, lb, p, kEps, true);
        return c.out;
      });
      compare(dispatched, comp, 0.0);
      CHECK(d.keep_mask.defined() == (p > 0));
      if (p > 0) CHECK(at::equal(d.keep_mask, c.keep_mask));
    }
  }
}

TEST_CASE("bad arguments are refused with the operand and the shapes named") {
  auto x = at::randn({4, 8});
  CHECK_THROWS_WITH(K::bias_gelu(x, at::zeros({7})), Catch::Contains("bias has shape [7], expected [8]"));
  CHECK_THROWS_WITH(K::bias_dropout_add_layernorm(x, {}, at::zeros({4, 7}), {}, {}, 0.0, 1e-5, true),
                    Catch::Contains("residual has shape [4, 7]"));
  CHECK_THROWS_WITH(K::bias_dropout_add_layernorm(x, {}, x, at::ones({9}), {}, 0.0, 1e-5, true),
                    Catch::Contains("weight has shape [9], expected [8]"));
  CHECK_THROWS_WITH(K::bias_dropout_add_layernorm(x, {}, x, {}, {}, 1.0, 1e-5, true),
                    Catch::Contains("dropout probability 1 is outside [0, 1)"));
  CHECK_THROWS_WITH(K::composite::bias_dropout_add_layernorm(x, {}, x, {}, {}, 0.5, 1e-5, true, at::ones({4, 7}, at::kBool)),
                    Catch::Contains("keep_mask has shape [4, 7]"));
}

TEST_CASE("the build says whether the CUDA kernels are in it, and for which GPUs") {
  CHECK(K::cuda_built() == static_cast<bool>(HPCBENCH_EXPECT_CUDA_KERNELS));
  CHECK(K::cuda_archs() == HPCBENCH_EXPECT_CUDA_ARCHS);
}
