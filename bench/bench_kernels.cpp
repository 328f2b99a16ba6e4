// The fused kernels' numerics check and timing (lib/kernels).
//
//   bench_kernels [--check-only] [--rows N] [--iters N] [--inject-wrong-element]
//   bench_kernels --fp8 [--dry] [--m N] [--iters N]   (fp8_gemms.h)
//   bench_kernels --adamw [--check-only] [--iters N] [--inject-wrong-element]
//                                     (the master-weight AdamW step alone)
//
// Every kernel, forward and backward, fp32 and bf16, on random inputs of a
// fixed seed (the master-weight AdamW step: two steps of bert-base's layout),
// against its ATen composite (the same dropout mask applied),
// each output and gradient one row: its largest error element by element,
// the tolerance and why (--inject-wrong-element: a test of that check). On a machine without a CUDA device the composites are checked against
// the unfused modules instead and the CUDA rows are said not to have run.
// Then, unless --check-only, the kernels' times beside the composites' on
// CUDA; --adamw: the step's time beside PyTorch's fused AdamW on the same
// work (FusedReference), the kernel on CUDA, the composite on a CPU. Exit
// status 1 when any check fails, 2 on bad arguments.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/functional/embedding.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#if HPCBENCH_BENCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fp8_gemms.h"
#include "kernels/embedding_layernorm.h"
#include "kernels/fused.h"
#include "kernels/master_adamw.h"
#include "train/op_count.h"

namespace K = hpcbench::kernels;

namespace {

using Named = std::vector<std::pair<std::string, at::Tensor>>;

constexpr double kEps = 1e-12;  // BERT's layer_norm_eps
constexpr double kDropout = 0.1;  // BERT's hidden_dropout_prob
constexpr int64_t kPad = 0;  // BERT's pad_token_id: its word row gets no gradient

// Checked element by element: each element's error against the
// reference's value there, |a - b| / (|b| + rms(b)) <= tol. A norm-wise
// max|a - b| / max|b| lets a few wrong elements through wherever the tensor
// holds larger ones; rms(b) in the denominator keeps elements near zero,
// where any rounding is a large relative error, from deciding alone, while
// an element off by tol x rms still fails wherever it sits. fp32: unit
// roundoff 6e-8, grown by sums over up to 3072 columns (LayerNorm's mean
// and variance, its backward's two row sums) or rows (the bias and weight
// gradients) taken in another order; 1e-5. bf16: unit roundoff 2^-9 (8-bit
// mantissa); the composite rounds x + bias, the dropout, the residual sum and
// the output where the kernel rounds once, so about four roundings of one
// element's value separate them: 2^-6.
double tolerance(at::ScalarType t) { return t == at::kBFloat16 ? 1.0 / 64 : 1e-5; }

struct Row {
  std::string compare, device, dtype, shape;
  double p;
  std::string tensor;
  double max_abs, norm_err, err, tol;
  int64_t bad;  // elements over tol
  bool ok;
};
int failures = 0;
// --inject-wrong-element: the first comparison's first tensor of more than
// one element (one element is its own rms) gets one wrong element where the
// reference is smallest, off by 2 tol x rms: the element-wise check must fail
// it, though the norm-wise error stays under tol.
bool inject_wrong_element = false;

void header() {
  fmt::print("# bench_kernels: the fused kernels (lib/kernels) against a reference, forward and backward\n");
  fmt::print("# err = max over elements of |a - b| / (|b| + rms(b)) (b the reference), bad = elements over tol;\n");
  fmt::print("#   norm = max|a - b| / max|b| for comparison only; tol: fp32 1e-5 (rounding 6e-8 grown by sums over\n");
  fmt::print("#   up to 3072 terms in another order), bf16 2^-6 = 0.0156 (8-bit mantissa: the composite rounds\n");
  fmt::print("#   x+bias, the dropout, the residual sum and the output; the kernel once, in fp32)\n");
  fmt::print("# {:<30} {:<6} {:<5} {:<11} {:>5} {:<9} {:>10} {:>10} {:>10} {:>10} {:>6} {}\n", "compare", "device",
             "dtype", "shape", "p", "tensor", "max_abs", "norm", "err", "tol", "bad", "ok");
}

void print(const Row& r) {
  if (!r.ok) ++failures;
  fmt::print("  {:<30} {:<6} {:<5} {:<11} {:>5.2f} {:<9} {:>10.3e} {:>10.3e} {:>10.3e} {:>10.3e} {:>6} {}\n", r.compare,
             r.device, r.dtype, r.shape, r.p, r.tensor, r.max_abs, r.norm_err, r.err, r.tol, r.bad,
             r.ok ? "ok" : "FAIL");
}

// A pass/fail fact that is not a tolerance comparison (mask statistics, RNG advance).
void fact(const std::string& what, const std::string& device, bool ok, const std::string& detail) {
  if (!ok) ++failures;
  fmt::print("  {:<62} {:<40} {}\n", what + " (" + device + ")", detail, ok ? "ok" : "FAIL");
}

std::string dtype_name(at::ScalarType t) { return t == at::kBFloat16 ? "bf16" : "fp32"; }
std::string shape_name(int64_t rows, int64_t n) { return fmt::format("{}x{}", rows, n); }

// One element of `a` (float64) set wrong where |b| is smallest (see
// inject_wrong_element).
void inject(at::Tensor& a64, const at::Tensor& b64, double tol) {
  const double rms = b64.pow(2).mean().sqrt().item<double>();
  const int64_t i = b64.abs().flatten().argmin().item<int64_t>();
  auto flat = a64.view({-1});
  flat[i] = b64.view({-1})[i].item<double>() + 2 * tol * rms;
  fmt::print("# injected: element {} of the next row set 2 tol x rms = {:.3e} off its reference\n", i, 2 * tol * rms);
}

// The element-wise and norm-wise errors of `a` against the reference `b`.
void measure(Row& r, const at::Tensor& a, const at::Tensor& b) {
  auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  if (inject_wrong_element && b.numel() > 1) {
    inject(a64, b64, r.tol);
    inject_wrong_element = false;
  }
  const auto diff = (a64 - b64).abs();
  const double rms = b64.pow(2).mean().sqrt().item<double>();
  const auto rel = diff / (b64.abs() + std::max(rms, 1e-30));
  r.max_abs = diff.max().item<double>();
  r.norm_err = r.max_abs / std::max(b64.abs().max().item<double>(), 1e-30);
  r.err = rel.max().item<double>();
  r.bad = (rel > r.tol).sum().item<int64_t>() + (~at::isfinite(a64)).sum().item<int64_t>();
  r.ok = std::isfinite(r.err) && r.bad == 0;
}

void compare(const std::string& what, const Named& got, const Named& want, at::ScalarType dtype, int64_t rows,
             int64_t n, double p) {
  for (size_t i = 0; i < want.size(); ++i) {
    const at::Tensor& a = got[i].second;
    const at::Tensor& b = want[i].second;
    Row r{what, a.is_cuda() ? "cuda" : "cpu", dtype_name(dtype), shape_name(rows, n), p, want[i].first, NAN, NAN, NAN,
          tolerance(dtype), 0, false};
    if (a.defined() && b.defined() && a.sizes() == b.sizes()) measure(r, a, b);
    print(r);
  }
}

struct Inputs {
  at::Tensor x, bias, residual, weight, ln_bias, dy;
};

Inputs make_inputs(int64_t rows, int64_t n, at::ScalarType dtype, c10::Device device, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto f = at::TensorOptions().dtype(at::kFloat);
  auto to = [&](at::Tensor t) { return t.to(device, dtype); };
  Inputs in;
  in.x = to(at::randn({rows, n}, gen, f));
  in.bias = to(0.5 * at::randn({n}, gen, f));
  in.residual = to(at::randn({rows, n}, gen, f));
  in.weight = to(1 + 0.2 * at::randn({n}, gen, f));
  in.ln_bias = to(0.1 * at::randn({n}, gen, f));
  in.dy = to(at::randn({rows, n}, gen, f));
  return in;
}

at::Tensor leaf(const at::Tensor& t) { return t.detach().clone().requires_grad_(true); }

using GeluFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;
using LnFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      const at::Tensor&)>;

Named run_gelu(const Inputs& in, const GeluFn& fn) {
  auto x = leaf(in.x), b = leaf(in.bias);
  at::Tensor y = fn(x, b);
  y.backward(in.dy);
  return {{"out", y.detach()}, {"d_x", x.grad()}, {"d_bias", b.grad()}};
}

Named run_ln(const Inputs& in, const LnFn& fn) {
  auto x = leaf(in.x), b = leaf(in.bias), r = leaf(in.residual), w = leaf(in.weight), lb = leaf(in.ln_bias);
  at::Tensor y = fn(x, b, r, w, lb);
  y.backward(in.dy);
  return {{"out", y.detach()}, {"d_x", x.grad()},      {"d_bias", b.grad()},
          {"d_resid", r.grad()}, {"d_weight", w.grad()}, {"d_lnbias", lb.grad()}};
}

// The unfused modules the model runs today: x + bias, then GELU; x + bias,
// dropout, + residual, then LayerNorm.
at::Tensor unfused_gelu(const at::Tensor& x, const at::Tensor& b) {
  static torch::nn::GELU gelu(torch::nn::GELUOptions().approximate("none"));
  return gelu(x + b);
}
at::Tensor unfused_ln(const at::Tensor& h, const at::Tensor& r, const at::Tensor& w, const at::Tensor& lb) {
  namespace F = torch::nn::functional;
  return F::layer_norm(h + r, F::LayerNormFuncOptions({h.size(-1)}).weight(w).bias(lb).eps(kEps));
}

// The embeddings' op (kernels/embedding_layernorm.h): sequences of `seq`
// tokens, a table of 1000 words (the lookups read rows; the vocabulary's
// size changes nothing else, and ids repeat, so that gradient rows
// accumulate), BERT's 2 types and 512 positions, the last 3 tokens of each
// sequence the padding id.
struct EmbInputs {
  at::Tensor ids, types, word, type, pos, ln_w, ln_b, dy;
};

EmbInputs make_emb_inputs(int64_t rows, int64_t seq, int64_t n, at::ScalarType dtype, c10::Device device,
                          uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto f = at::TensorOptions().dtype(at::kFloat);
  auto l = at::TensorOptions().dtype(at::kLong);
  auto to = [&](at::Tensor t) { return t.to(device, dtype); };
  EmbInputs in;
  in.ids = at::randint(1, 1000, {rows / seq, seq}, gen, l);
  in.ids.narrow(1, seq - 3, 3).fill_(kPad);
  in.ids = in.ids.to(device);
  in.types = at::randint(0, 2, {rows / seq, seq}, gen, l).to(device);
  in.word = to(at::randn({1000, n}, gen, f));
  in.type = to(at::randn({2, n}, gen, f));
  in.pos = to(at::randn({512, n}, gen, f));
  in.ln_w = to(1 + 0.2 * at::randn({n}, gen, f));
  in.ln_b = to(0.1 * at::randn({n}, gen, f));
  in.dy = to(at::randn({rows / seq, seq, n}, gen, f));
  return in;
}

using EmbFn = std::function<at::Tensor(const EmbInputs&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const at::Tensor&, const at::Tensor&)>;

Named run_emb(const EmbInputs& in, const EmbFn& fn) {
  auto w = leaf(in.word), t = leaf(in.type), p = leaf(in.pos), lw = leaf(in.ln_w), lb = leaf(in.ln_b);
  at::Tensor y = fn(in, w, t, p, lw, lb);
  y.backward(in.dy);
  return {{"out", y.detach()},  {"d_word", w.grad()},   {"d_type", t.grad()},
          {"d_pos", p.grad()}, {"d_weight", lw.grad()}, {"d_lnbias", lb.grad()}};
}

// The unfused module's operations: the two lookups added, then the
// positions', then LayerNorm; the word lookup with BERT's padding_idx.
at::Tensor unfused_emb(const EmbInputs& in, const at::Tensor& w, const at::Tensor& t, const at::Tensor& p,
                       const at::Tensor& lw, const at::Tensor& lb) {
  namespace F = torch::nn::functional;
  auto positions = at::arange(in.ids.size(1), in.ids.options()).unsqueeze(0);
  auto e = F::embedding(in.ids, w, F::EmbeddingFuncOptions().padding_idx(kPad)) + F::embedding(in.types, t);
  e = e + F::embedding(positions, p);
  return F::layer_norm(e, F::LayerNormFuncOptions({w.size(1)}).weight(lw).bias(lb).eps(kEps));
}
at::Tensor composite_emb(const EmbInputs& in, const at::Tensor& w, const at::Tensor& t, const at::Tensor& p,
                         const at::Tensor& lw, const at::Tensor& lb) {
  return K::composite::embedding_layernorm_autograd(in.ids, in.types, w, t, p, lw, lb, kEps, kPad);
}
at::Tensor dispatched_emb(const EmbInputs& in, const at::Tensor& w, const at::Tensor& t, const at::Tensor& p,
                          const at::Tensor& lw, const at::Tensor& lb) {
  return K::embedding_layernorm_autograd(in.ids, in.types, w, t, p, lw, lb, kEps, kPad);
}

// 8 x 384 tokens (the users' batch) where there are that many, else
// sequences of 16, or of 7 (77 rows: the ragged shape).
int64_t emb_seq(int64_t rows) { return rows % 384 == 0 ? 384 : rows % 16 == 0 ? 16 : 7; }

// The composites against the unfused modules: the reference semantics. With
// dropout the module draws the mask and the composite is given it: the same
// generator state applied to ones gives the same draws (at::dropout's draws
// depend on the shape and the generator only). Not read off the module's
// output: in bf16, x + bias is exactly 0 for a few elements.
void check_composites(c10::Device dev, int64_t rows, int64_t n_gelu, int64_t n_ln) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    Inputs g = make_inputs(rows, n_gelu, dtype, dev, 1);
    compare("composite vs unfused gelu", run_gelu(g, K::composite::bias_gelu), run_gelu(g, unfused_gelu), dtype, rows,
            n_gelu, 0);
    Inputs in = make_inputs(rows, n_ln, dtype, dev, 2);
    for (double p : {0.0, kDropout}) {
      torch::nn::Dropout dropout(p);
      at::manual_seed(13);
      at::Tensor mask = dropout(at::ones_like(in.x)) != 0;
      at::manual_seed(13);
      Named want = run_ln(in, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return unfused_ln(dropout(x + b), r, w, lb);
      });
      Named got = run_ln(in, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return K::composite::bias_dropout_add_layernorm(x, b, r, w, lb, p, kEps, true, p > 0 ? mask : at::Tensor());
      });
      compare("composite vs unfused layernorm", got, want, dtype, rows, n_ln, p);
    }
    EmbInputs e = make_emb_inputs(rows, emb_seq(rows), n_ln, dtype, dev, 10);
    compare("composite vs unfused embeddings", run_emb(e, composite_emb), run_emb(e, unfused_emb), dtype, rows, n_ln,
            0);
  }
}

// The master-weight AdamW step (kernels/master_adamw.h) over a flat of
// parameters: bert-base's 201 (110M elements) on a GPU, a few of its shapes
// cut down on the CPU; `ragged` adds sizes that are no multiple of 4 and
// gradients 2 bytes off their alignment (the kernel's element-by-element
// paths). Group 0 (decayed: the matrices) takes its rate as a device tensor,
// as under a graph; group 1 (biases, LayerNorm) as a value.
std::vector<std::vector<int64_t>> adamw_shapes(bool bert_base, bool ragged) {
  std::vector<std::vector<int64_t>> s;
  const int64_t h = bert_base ? 768 : 64, f = 4 * h, layers = bert_base ? 12 : 2;
  s.push_back({bert_base ? 30522 : 500, h});
  s.push_back({bert_base ? 512 : 128, h});
  s.push_back({2, h});
  s.push_back({h});
  s.push_back({h});
  for (int64_t l = 0; l < layers; ++l)
    for (auto x : std::vector<std::vector<int64_t>>{{3 * h, h}, {3 * h}, {h, h}, {h}, {h}, {h}, {f, h}, {f}, {h, f}, {h}, {h}, {h}})
      s.push_back(x);
  s.push_back({2, h});
  s.push_back({2});
  if (ragged)
    for (auto x : std::vector<std::vector<int64_t>>{{13}, {3, 7}, {1}, {1001}, {5}, {4097}}) s.push_back(x);
  return s;
}

struct AdamWCase {
  K::MasterAdamW s;
  at::Tensor lr0;  // group 0's rate tensor
  // step_torch's reference: fp32 per-parameter copies and their optimizer.
  std::vector<at::Tensor> ref_params;
  std::shared_ptr<torch::optim::AdamW> ref_opt;
};

AdamWCase make_adamw_case(const std::vector<std::vector<int64_t>>& shapes, c10::Device dev, bool ragged,
                          uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  AdamWCase c;
  auto& s = c.s;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    s.offsets.push_back(s.numel);
    s.groups.push_back(shape.size() > 1 ? 0 : 1);
    s.numel += n;
  }
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  s.master = (0.05 * at::randn({s.numel}, gen, f32)).to(dev);
  s.exp_avg = at::zeros({s.numel}, f32.device(dev));
  s.exp_avg_sq = at::zeros({s.numel}, f32.device(dev));
  s.weight = s.master.to(at::kBFloat16);
  s.step = at::zeros({1}, f32.device(dev));
  s.weight_decay = {0.01, 0.0};
  c.lr0 = at::full({}, 2e-3, f32.device(dev));
  s.lr = {c.lr0, at::Tensor()};
  s.lr_value = {0.0, 2e-3};
  for (size_t k = 0; k < shapes.size(); ++k) {
    const int64_t n = (k + 1 < shapes.size() ? s.offsets[k + 1] : s.numel) - s.offsets[k];
    auto g = (0.01 * at::randn({n}, gen, f32)).to(dev, at::kBFloat16);
    // Every third gradient of the ragged case 2 bytes off alignment.
    if (ragged && k % 3 == 2) g = at::cat({at::zeros({1}, g.options()), g}).narrow(0, 1, n);
    s.grads.push_back(g.view(shapes[k]));
  }
  return c;
}

AdamWCase clone_case(const AdamWCase& c) {
  AdamWCase d = c;
  for (auto* t : {&d.s.master, &d.s.exp_avg, &d.s.exp_avg_sq, &d.s.weight, &d.s.step, &d.lr0}) *t = t->clone();
  d.s.lr = {d.lr0, at::Tensor()};
  return d;
}

Named adamw_state(const AdamWCase& c, const at::Tensor& norm) {
  const auto n = c.s.numel;
  return {{"norm", norm.reshape({1})},
          {"master", c.s.master.narrow(0, 0, n)},
          {"m", c.s.exp_avg.narrow(0, 0, n)},
          {"v", c.s.exp_avg_sq.narrow(0, 0, n)},
          {"weight", c.s.weight.narrow(0, 0, n)}};
}

// Two steps (the bias corrections from the device's step count 1, then 2),
// clipping engaged (max_norm below the gradients' norm); compared after the
// second. `a` and `b` step through `step_a` and `step_b`.
using AdamWStep = std::function<at::Tensor(AdamWCase&, double)>;
void compare_adamw(const std::string& what, AdamWCase& a, AdamWCase& b, const AdamWStep& step_a,
                   const AdamWStep& step_b) {
  at::Tensor na, nb;
  for (int step = 1; step <= 2; ++step) {
    for (auto* c : {&a, &b}) {
      c->lr0.fill_(2e-3 * step);
      c->s.lr_value[1] = 2e-3 * step;
    }
    na = step_a(a, 0.5);
    nb = step_b(b, 0.5);
  }
  Named got = adamw_state(a, na), want = adamw_state(b, nb);
  for (size_t i = 0; i < want.size(); ++i) {
    const auto dtype = got[i].second.scalar_type() == at::kBFloat16 ? at::kBFloat16 : at::kFloat;
    Row r{what, got[i].second.is_cuda() ? "cuda" : "cpu", dtype_name(dtype), fmt::format("{}", a.s.numel), 0,
          want[i].first, NAN, NAN, NAN, tolerance(dtype), 0, false};
    measure(r, got[i].second, want[i].second);
    print(r);
  }
}

// Clip and step through the dispatcher (the kernel on CUDA) or the composite.
at::Tensor step_dispatch(AdamWCase& c, double max_norm) {
  auto norm = at::zeros({1}, c.s.master.options()), coef = at::zeros({1}, c.s.master.options());
  auto scratch = at::zeros({std::max<int64_t>(1, K::grad_norm_scratch(c.s))}, c.s.master.options());
  K::grad_norm(c.s, max_norm, norm, coef, scratch);
  c.s.step.add_(1);
  K::master_adamw(c.s, coef);
  return norm;
}
at::Tensor step_composite(AdamWCase& c, double max_norm) {
  auto norm = at::zeros({1}, c.s.master.options()), coef = at::zeros({1}, c.s.master.options());
  K::composite::grad_norm(c.s, max_norm, norm, coef);
  c.s.step.add_(1);
  K::composite::master_adamw(c.s, coef);
  return norm;
}

// The reference the composite answers to: torch.nn.utils.clip_grad_norm_
// and torch.optim.AdamW (LibTorch's, op by op) on fp32 per-parameter
// copies, the weights rounded from them; the case's flats rebuilt from it.
at::Tensor step_torch(AdamWCase& c, double max_norm) {
  auto& s = c.s;
  if (!c.ref_opt) {
    std::vector<std::vector<at::Tensor>> by_group(2);
    for (size_t k = 0; k < s.grads.size(); ++k) {
      auto p = s.master.narrow(0, s.offsets[k], s.grads[k].numel()).view(s.grads[k].sizes()).detach().clone();
      c.ref_params.push_back(p.requires_grad_(true));
      by_group[static_cast<size_t>(s.groups[k])].push_back(c.ref_params.back());
    }
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (size_t g = 0; g < 2; ++g)
      groups.emplace_back(by_group[g], std::make_unique<torch::optim::AdamWOptions>(
                                           torch::optim::AdamWOptions(1e-3).weight_decay(s.weight_decay[g])));
    c.ref_opt = std::make_shared<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(1e-3));
  }
  auto& opt = *c.ref_opt;
  auto& mine = c.ref_params;
  for (auto& g : opt.param_groups()) g.options().set_lr(c.s.lr_value[1]);
  for (size_t k = 0; k < mine.size(); ++k) mine[k].mutable_grad() = s.grads[k].to(at::kFloat);
  const double norm = torch::nn::utils::clip_grad_norm_(mine, max_norm);
  opt.step();
  at::NoGradGuard no_grad;
  for (size_t k = 0; k < mine.size(); ++k) {
    auto& st = static_cast<torch::optim::AdamWParamState&>(*opt.state().at(mine[k].unsafeGetTensorImpl()));
    const auto n = mine[k].numel();
    s.master.narrow(0, s.offsets[k], n).copy_(mine[k].reshape({-1}));
    s.exp_avg.narrow(0, s.offsets[k], n).copy_(st.exp_avg().reshape({-1}));
    s.exp_avg_sq.narrow(0, s.offsets[k], n).copy_(st.exp_avg_sq().reshape({-1}));
  }
  s.weight.narrow(0, 0, s.numel).copy_(s.master.narrow(0, 0, s.numel));
  return at::full({1}, norm, s.master.options());
}

// The reference the candidate is timed against, and checked against first:
// PyTorch's own fused optimizer on the same work, as a user with bf16
// weights and fp32 masters runs it (torch.optim.AdamW(fused=True) over two
// groups, clip_grad_norm_, then the bf16 copy): the bf16 gradients copied
// into fp32 .grad tensors (_foreach_copy_), clip_grad_norm_ (_foreach_norm,
// stack, vector_norm, the clamped coefficient, _foreach_mul_), the step
// counts (_foreach_add_), _fused_adamw_ once per group (decay 0.01 on the
// matrices, 0 on the rest), the masters copied into the bf16 weights
// (_foreach_copy_). Per-parameter views of the case's flats, so that its
// state is the candidate's to compare; its own per-parameter step counts.
struct FusedReference {
  AdamWCase* c = nullptr;
  std::vector<at::Tensor> grads32, g16, weights, masters_all, steps;
  std::array<std::vector<at::Tensor>, 2> masters, grads, ms, vs, step_of;
  at::Tensor grad32;

  explicit FusedReference(AdamWCase& cs) : c(&cs) {
    auto& s = cs.s;
    grad32 = at::zeros({s.numel}, s.master.options());
    for (size_t k = 0; k < s.grads.size(); ++k) {
      const auto n = s.grads[k].numel(), o = s.offsets[k];
      const auto g = static_cast<size_t>(s.groups[k]);
      grads32.push_back(grad32.narrow(0, o, n));
      g16.push_back(s.grads[k].reshape({-1}));
      weights.push_back(s.weight.narrow(0, o, n));
      masters_all.push_back(s.master.narrow(0, o, n));
      steps.push_back(at::zeros({}, s.master.options()));
      masters[g].push_back(s.master.narrow(0, o, n));
      grads[g].push_back(grads32.back());
      ms[g].push_back(s.exp_avg.narrow(0, o, n));
      vs[g].push_back(s.exp_avg_sq.narrow(0, o, n));
      step_of[g].push_back(steps.back());
    }
  }
  // One step; returns the gradients' norm. Group 0's rate: the case's device
  // tensor on CUDA (as a graphed user passes it), its value on the CPU (as
  // a user's float rate there).
  at::Tensor operator()(double max_norm) {
    auto& s = c->s;
    at::_foreach_copy_(grads32, g16);
    auto total = at::linalg_vector_norm(at::stack(at::_foreach_norm(grads32, 2)), 2);
    at::_foreach_mul_(grads32, (max_norm / (total + 1e-6)).clamp_max(1.0));
    at::_foreach_add_(steps, 1);
    for (size_t g = 0; g < 2; ++g) {
      if (masters[g].empty()) continue;
      if (g == 0 && c->lr0.is_cuda())
        at::_fused_adamw_(masters[g], grads[g], ms[g], vs[g], {}, step_of[g], c->lr0, s.beta1, s.beta2,
                          s.weight_decay[g], s.eps, false, false);
      else
        at::_fused_adamw_(masters[g], grads[g], ms[g], vs[g], {}, step_of[g],
                          g == 0 ? c->lr0.item<double>() : s.lr_value[g], s.beta1, s.beta2, s.weight_decay[g], s.eps,
                          false, false);
    }
    at::_foreach_copy_(weights, masters_all);
    return total.reshape({1});
  }
};

void check_reference(c10::Device dev) {
  AdamWCase a = make_adamw_case(adamw_shapes(dev.is_cuda(), true), dev, true, 25);
  AdamWCase b = clone_case(a);
  FusedReference reference(a);
  compare_adamw("torch fused adamw vs composite", a, b, [&](AdamWCase&, double m) { return reference(m); },
                step_composite);
}

// The composite against LibTorch's AdamW op by op (the semantics), and the
// timing's reference against the composite (the same work, so that the
// ratio compares like with like), on the CPU.
void check_adamw_composite() {
  for (bool ragged : {false, true}) {
    auto shapes = adamw_shapes(false, ragged);
    AdamWCase a = make_adamw_case(shapes, c10::Device(c10::kCPU), ragged, 21);
    AdamWCase b = clone_case(a);
    compare_adamw("composite vs torch adamw", a, b, step_composite, step_torch);
  }
  check_reference(c10::Device(c10::kCPU));
}

void synchronize(c10::Device dev) {
#if HPCBENCH_BENCH_CUDA
  if (dev.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)dev;
#endif
}

// `reps` interleaved timings (a, b, a, b, ...) of `iters` steps each, in ms
// per step: on a shared machine a slow spell then lands on both sides.
std::pair<std::vector<double>, std::vector<double>> time_interleaved(const std::function<void()>& a,
                                                                     const std::function<void()>& b, c10::Device dev,
                                                                     int iters, int reps) {
  for (int i = 0; i < 3; ++i) a(), b();
  synchronize(dev);
  std::pair<std::vector<double>, std::vector<double>> t;
  for (int r = 0; r < reps; ++r)
    for (auto* side : {&t.first, &t.second}) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) (side == &t.first ? a : b)();
      synchronize(dev);
      side->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters);
    }
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

// The candidate (the kernel on CUDA; on the CPU the composite, which is what
// runs there) against FusedReference on the same layout and state, after
// every check passed. Bytes per element the step must move: the kernel's
// 2 (norm) + 2 + 3 x 8 + 2 = 30; the reference's 2 + 4 (copy in), 4 (norm),
// 8 (clip), 4 + 3 x 8 (AdamW), 4 + 2 (copy out) = 52. A line
// "# adamw-timing {json}" carries every repeat for validate.sh's adamw.json.
void time_adamw(c10::Device dev, int iters) {
  at::NoGradGuard no_grad;
  const bool cuda = dev.is_cuda();
  const int reps = 5;
  AdamWCase c = make_adamw_case(adamw_shapes(cuda, false), dev, false, 24);
  AdamWCase r = clone_case(c);
  FusedReference reference(r);
  auto opts = c.s.master.options();
  auto norm = at::zeros({1}, opts), coef = at::zeros({1}, opts);
  auto scratch = at::zeros({std::max<int64_t>(1, K::grad_norm_scratch(c.s))}, opts);
  auto candidate = [&] {
    if (cuda) {
      K::grad_norm(c.s, 1.0, norm, coef, scratch);
      c.s.step.add_(1);
      K::master_adamw(c.s, coef);
    } else {
      K::composite::grad_norm(c.s, 1.0, norm, coef);
      c.s.step.add_(1);
      K::composite::master_adamw(c.s, coef);
    }
  };
  // ATen operations of one step each (hpcbench run's HPCBENCH_COUNT_OPS counter: top-level, and
  // in all with those they call), exact where the times are noise; counted apart from the
  // timing, whose steps the counter's callback would slow.
  hpcbench::train::OpCounts ops_cand, ops_ref;
  {
    hpcbench::train::OpCounter counter(true);
    candidate();
    synchronize(dev);
    ops_cand = counter.take();
    reference(1.0);
    synchronize(dev);
    ops_ref = counter.take();
  }
  auto [t_cand, t_ref] = time_interleaved(candidate, [&] { reference(1.0); }, dev, iters, reps);
  const double n = static_cast<double>(c.s.numel), cand = median(t_cand), ref = median(t_ref);
  const std::string name = cuda ? "master_adamw kernel (norm + update)" : "composite (ATen ops; the CPU path)";
  fmt::print("\n# master AdamW timing on {}: clip + step of {} parameters ({} elements, {}), ms per step,\n"
             "# median of {} interleaved repeats of {} steps{}; GB = bytes the step must move (30 B/element;\n"
             "# the reference 52: torch fused AdamW as a user runs it, see FusedReference in bench_kernels.cpp)\n",
             cuda ? at::Device(dev).str() : "cpu", c.s.grads.size(), c.s.numel,
             cuda ? "bert-base" : "a cut-down bert layout", reps, iters,
             cuda ? "" : " (CPU: host-bound and noisy on a shared machine)");
  fmt::print("# {:<48} {:>10} {:>8} {:>8} {:>15}\n", "path", "ms", "GB", "GB/s", "ops top/all");
  auto row = [&](const std::string& what, double ms, double bytes, const hpcbench::train::OpCounts& o) {
    fmt::print("  {:<48} {:>10.4f} {:>8.3f} {:>8.0f} {:>15}\n", what, ms, bytes * n / 1e9,
               bytes * n / 1e9 / (ms / 1e3), fmt::format("{}/{}", o.top_level, o.all));
  };
  row(name, cand, 30, ops_cand);
  row("reference: torch _fused_adamw_ + clip + copies", ref, 52, ops_ref);
  fmt::print("  {:<48} {:>10.2f}x\n", "reference / candidate (above 1: the candidate is faster)", ref / cand);
  fmt::print("# adamw-timing {{\"device\": \"{}\", \"candidate\": \"{}\", \"reference\": \"torch _fused_adamw_ per "
             "group, clip_grad_norm_ by _foreach ops, bf16 grads copied in and weights copied out\", "
             "\"parameters\": {}, \"elements\": {}, \"iters\": {}, \"candidate_ms\": [{:.6f}], \"reference_ms\": "
             "[{:.6f}], \"candidate_ms_median\": {:.6f}, \"reference_ms_median\": {:.6f}, \"ratio\": {:.4f}, "
             "\"candidate_ops\": [{}, {}], \"reference_ops\": [{}, {}]}}\n",
             cuda ? "cuda" : "cpu", cuda ? "kernel" : "composite", c.s.grads.size(), c.s.numel, iters,
             fmt::join(t_cand, ", "), fmt::join(t_ref, ", "), cand, ref, ref / cand, ops_cand.top_level, ops_cand.all,
             ops_ref.top_level, ops_ref.all);
}

#if HPCBENCH_BENCH_CUDA
// The kernels (through the dispatcher) against the composites on the same
// device; with dropout, the composite is given the kernel's mask. The
// embeddings' op: its kernel forward against the composite forward, each
// under the op's autograd node (whose backward then starts from each
// forward's mean and rstd).
void check_kernels(c10::Device dev, int64_t rows, int64_t n_gelu, int64_t n_ln) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    Inputs g = make_inputs(rows, n_gelu, dtype, dev, 3);
    compare("kernel vs composite gelu", run_gelu(g, K::bias_gelu), run_gelu(g, K::composite::bias_gelu), dtype, rows,
            n_gelu, 0);
    Inputs in = make_inputs(rows, n_ln, dtype, dev, 4);
    for (double p : {0.0, kDropout}) {
      at::Tensor mask;
      Named got = run_ln(in, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        auto o = K::bias_dropout_add_layernorm_with_mask(x, b, r, w, lb, p, kEps, true);
        mask = o.keep_mask;
        return o.out;
      });
      Named want = run_ln(in, [&](auto& x, auto& b, auto& r, auto& w, auto& lb) {
        return K::composite::bias_dropout_add_layernorm(x, b, r, w, lb, p, kEps, true, mask);
      });
      compare("kernel vs composite layernorm", got, want, dtype, rows, n_ln, p);
      if (p > 0) {
        // 1 - p of the elements kept: within 5 standard deviations.
        const double kept = mask.to(at::kDouble).mean().item<double>();
        const double sd = std::sqrt(p * (1 - p) / static_cast<double>(mask.numel()));
        fact(fmt::format("dropout keeps 1 - p, {} {}", dtype_name(dtype), shape_name(rows, n_ln)), "cuda",
             std::abs(kept - (1 - p)) < 5 * sd, fmt::format("kept {:.5f}, want {:.3f} +- {:.5f}", kept, 1 - p, 5 * sd));
      }
    }
    EmbInputs e = make_emb_inputs(rows, emb_seq(rows), n_ln, dtype, dev, 11);
    compare("kernel vs composite embeddings", run_emb(e, dispatched_emb), run_emb(e, composite_emb), dtype, rows,
            n_ln, 0);
  }
}

// The RNG: each call draws a new mask; the same generator state draws the
// same mask whatever the dtype (the mask depends on seed, offset and element
// only); and a captured CUDA graph draws a new mask on every replay (the
// kernel reads seed and offset from device memory), each replay's output
// equal to the composite's with that replay's mask.
void check_rng(c10::Device dev, int64_t rows, int64_t n) {
  at::NoGradGuard no_grad;
  Inputs f = make_inputs(rows, n, at::kFloat, dev, 5);
  Inputs h = make_inputs(rows, n, at::kBFloat16, dev, 5);
  auto call = [&](const Inputs& in) {
    return K::bias_dropout_add_layernorm_with_mask(in.x, in.bias, in.residual, in.weight, in.ln_bias, kDropout, kEps,
                                                   true);
  };
  at::manual_seed(7);
  auto a = call(f), b = call(f);
  fact("successive calls draw different masks", "cuda", !at::equal(a.keep_mask, b.keep_mask),
       fmt::format("{} of {} differ", (a.keep_mask != b.keep_mask).sum().item<int64_t>(), a.keep_mask.numel()));
  at::manual_seed(7);
  auto c = call(h);
  fact("same generator state, fp32 and bf16: same mask", "cuda", at::equal(a.keep_mask, c.keep_mask), "");

  at::cuda::CUDAGraph graph;
  auto side = at::cuda::getStreamFromPool(false, dev.index());
  K::MaskedOutput captured;
  c10::cuda::device_synchronize();  // the inputs, made on the default stream
  {
    at::cuda::CUDAStreamGuard guard(side);
    call(f);  // warm up on the capturing stream
    graph.capture_begin();
    captured = call(f);
    graph.capture_end();
  }
  graph.replay();
  c10::cuda::device_synchronize();
  at::Tensor first = captured.keep_mask.clone();
  graph.replay();
  c10::cuda::device_synchronize();
  fact("graph replays draw different masks", "cuda", !at::equal(first, captured.keep_mask),
       fmt::format("{} of {} differ", (first != captured.keep_mask).sum().item<int64_t>(), first.numel()));
  auto want = K::composite::bias_dropout_add_layernorm(f.x, f.bias, f.residual, f.weight, f.ln_bias, kDropout, kEps,
                                                       true, captured.keep_mask);
  compare("graph replay vs composite", {{"out", captured.out}}, {{"out", want}}, at::kFloat, rows, n, kDropout);
}

// Median of `reps` timings of `iters` forward + backward passes.
double time_ms(const std::function<void()>& step, int iters, int reps = 5) {
  for (int i = 0; i < 3; ++i) step();
  c10::cuda::device_synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) step();
    c10::cuda::device_synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void timings(c10::Device dev, int64_t rows, int64_t n_gelu, int64_t n_ln, int iters) {
  fmt::print("\n# timing on {}: forward + backward per call (ms), median of 5 runs of {} calls, wall clock\n",
             at::cuda::getDeviceProperties(dev.index())->name, iters);
  fmt::print("# {:<24} {:<5} {:<11} {:>5} {:>12} {:>12} {:>8}\n", "kernel", "dtype", "shape", "p", "fused_ms",
             "composite_ms", "speedup");
  for (auto dtype : {at::kBFloat16, at::kFloat}) {
    Inputs g = make_inputs(rows, n_gelu, dtype, dev, 8);
    auto x = leaf(g.x), b = leaf(g.bias);
    // torch::autograd::grad rather than backward(): no accumulation into
    // .grad, which would add an operation per gradient to both sides.
    double fused = time_ms([&] { torch::autograd::grad({K::bias_gelu(x, b)}, {x, b}, {g.dy}); }, iters);
    double comp = time_ms([&] { torch::autograd::grad({K::composite::bias_gelu(x, b)}, {x, b}, {g.dy}); }, iters);
    fmt::print("  {:<24} {:<5} {:<11} {:>5.2f} {:>12.4f} {:>12.4f} {:>7.2f}x\n", "bias_gelu", dtype_name(dtype),
               shape_name(rows, n_gelu), 0.0, fused, comp, comp / fused);
    Inputs in = make_inputs(rows, n_ln, dtype, dev, 9);
    auto lx = leaf(in.x), lb = leaf(in.bias), lr = leaf(in.residual), lw = leaf(in.weight), llb = leaf(in.ln_bias);
    for (double p : {0.0, kDropout}) {
      const std::vector<at::Tensor> leaves{lx, lb, lr, lw, llb};
      double f = time_ms(
          [&] {
            torch::autograd::grad({K::bias_dropout_add_layernorm(lx, lb, lr, lw, llb, p, kEps, true)}, leaves, {in.dy});
          },
          iters);
      double c = time_ms(
          [&] {
            torch::autograd::grad({K::composite::bias_dropout_add_layernorm(lx, lb, lr, lw, llb, p, kEps, true)},
                                  leaves, {in.dy});
          },
          iters);
      fmt::print("  {:<24} {:<5} {:<11} {:>5.2f} {:>12.4f} {:>12.4f} {:>7.2f}x\n", "bias_dropout_add_layernorm",
                 dtype_name(dtype), shape_name(rows, n_ln), p, f, c, c / f);
    }
  }
}

// The kernel against the composite on the same device, bert-base's layout
// and the ragged one; then the same two steps captured once in a CUDA graph
// and replayed (the rate changed between replays, the step count and the
// clip coefficient advancing on the device), against the composite run
// eagerly. The timing's reference is checked against the composite here too:
// on CUDA it takes the rate as a device tensor, another path than the CPU's.
void check_adamw_kernel(c10::Device dev) {
  at::NoGradGuard no_grad;
  for (bool ragged : {false, true}) {
    AdamWCase a = make_adamw_case(adamw_shapes(true, ragged), dev, ragged, 22);
    AdamWCase b = clone_case(a);
    fact(fmt::format("master_adamw takes the kernel, {} elements", a.s.numel), "cuda", K::master_adamw_uses_cuda(a.s),
         "");
    compare_adamw(ragged ? "kernel vs composite adamw, ragged" : "kernel vs composite adamw", a, b, step_dispatch,
                  step_composite);
  }
  check_reference(dev);
  AdamWCase a = make_adamw_case(adamw_shapes(true, true), dev, true, 23);
  a.s.lr = {a.lr0, a.lr0};
  AdamWCase b = clone_case(a);
  b.s.lr = {b.lr0, b.lr0};
  auto opts = a.s.master.options();
  auto norm = at::zeros({1}, opts), coef = at::zeros({1}, opts);
  auto scratch = at::zeros({K::grad_norm_scratch(a.s)}, opts);
  at::cuda::CUDAGraph graph;
  auto side = at::cuda::getStreamFromPool(false, dev.index());
  c10::cuda::device_synchronize();
  {
    at::cuda::CUDAStreamGuard guard(side);
    graph.capture_begin();
    K::grad_norm(a.s, 0.5, norm, coef, scratch);
    a.s.step.add_(1);
    K::master_adamw(a.s, coef);
    graph.capture_end();
  }
  compare_adamw(
      "graph replay vs composite adamw", a, b,
      [&](AdamWCase&, double) {
        graph.replay();
        c10::cuda::device_synchronize();
        return norm.clone();
      },
      step_composite);
}

#endif

[[noreturn]] void usage(const std::string& bad) {
  if (!bad.empty()) fmt::print(stderr, "bench_kernels: {}\n", bad);
  fmt::print(stderr, "usage: bench_kernels [--check-only] [--rows N] [--iters N] [--inject-wrong-element]\n"
             "       bench_kernels --fp8 [--dry] [--m N] [--iters N]\n"
             "       bench_kernels --adamw [--check-only] [--iters N] [--inject-wrong-element]\n");
  std::exit(2);
}

int64_t positive(const std::string& flag, const char* value) {
  if (!value) usage(flag + ": a value is missing");
  char* end = nullptr;
  long long v = std::strtoll(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v <= 0) usage(fmt::format("{} {}: not a positive integer", flag, value));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  bool check_only = false, fp8 = false, adamw_only = false;
  hpcbench::bench::Fp8Options fp8_options;
  int64_t rows = 0, iters = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check-only") {
      check_only = true;
    } else if (a == "--rows") {
      rows = positive(a, i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--iters") {
      iters = positive(a, i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--fp8") {
      fp8 = true;
    } else if (a == "--adamw") {
      adamw_only = true;
    } else if (a == "--dry") {
      fp8_options.dry = true;
    } else if (a == "--m") {
      fp8_options.m = positive(a, i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--inject-wrong-element") {
      inject_wrong_element = true;
    } else if (a == "-h" || a == "--help") {
      usage("");
    } else {
      usage("unknown argument " + a);
    }
  }
  if (fp8_options.dry && !fp8) usage("--dry applies to --fp8");
  if (adamw_only && (fp8 || rows != 0))
    usage("--adamw takes only --check-only, --iters and --inject-wrong-element");
  if (fp8) {
    fp8_options.iters = static_cast<int>(std::min<int64_t>(iters, 1000));
    return hpcbench::bench::run_fp8(fp8_options) == 0 ? 0 : 1;
  }
  // bert-base: hidden 768, FFN 3072; on a GPU 8 sequences of 384 tokens (the
  // users' batch), on the CPU a few rows, as the check there is the composites'.
  const int64_t n_gelu = 3072, n_ln = 768;
  const bool cuda = torch::cuda::is_available();
  if (rows == 0) rows = cuda ? 8 * 384 : 64;
  fmt::print("# fused CUDA kernels built: {}{}\n", K::cuda_built() ? "yes, " : "no", K::cuda_archs());
  header();
  if (!adamw_only) check_composites(c10::Device(c10::kCPU), rows, n_gelu, n_ln);
  check_adamw_composite();
#if HPCBENCH_BENCH_CUDA
  if (cuda && K::cuda_built()) {
    c10::Device dev(c10::kCUDA, 0);
    c10::cuda::CUDAGuard guard(dev);
    if (!adamw_only) {
      check_composites(dev, rows, n_gelu, n_ln);
      check_kernels(dev, rows, n_gelu, n_ln);
      // Shapes that are no multiple of 4 or 8: the element-by-element paths.
      check_kernels(dev, 77, 1001, 1001);
      check_rng(dev, rows, n_ln);
    }
    check_adamw_kernel(dev);
    // Timing only after every check passed: a wrong kernel's speed is no figure.
    if (failures == 0 && !check_only) {
      if (!adamw_only) timings(dev, rows, n_gelu, n_ln, static_cast<int>(iters));
      time_adamw(dev, static_cast<int>(std::min<int64_t>(iters, 20)));
    }
  } else {
    fmt::print("# CUDA rows not run: {}\n", !cuda ? "no CUDA device visible" : "the CUDA kernels are not built");
  }
#else
  fmt::print("# CUDA rows not run: LibTorch was built without CUDA\n");
#endif
  if (!check_only && !(cuda && K::cuda_built())) {
    // On the CPU the composite is what --fused runs: timed against the
    // reference, but only once every check passed.
    if (adamw_only && failures == 0)
      time_adamw(c10::Device(c10::kCPU), static_cast<int>(std::min<int64_t>(iters, 20)));
    else
      fmt::print("# timing not run: {}\n", adamw_only ? "a check failed" : "it compares the CUDA kernels");
  }
  fmt::print("# {}\n", failures == 0 ? "all checks passed" : fmt::format("{} checks FAILED", failures));
  return failures == 0 ? 0 : 1;
}
