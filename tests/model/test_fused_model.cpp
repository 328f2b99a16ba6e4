// The fused model (--fused: one QKV projection, the fused bias-GELU and
// bias-dropout-residual-LayerNorm kernels, here their CPU composites)
// against the unfused model with the same weights, and against Hugging Face
// (tests/reference/model_parity.py) through a checkpoint loaded into it and
// saved back.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fmt/format.h>
#include <set>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "model_test_util.h"

using namespace hpcbench;
using hpcbench::test::max_abs_diff;
using hpcbench::test::ref_tensors;
using hpcbench::test::reference_dir;
using hpcbench::test::rel_diff;

namespace {

model::BertConfig tiny_config(double dropout = 0.0) {
  auto cfg = model::BertConfig::from_json(reference_dir() / "model_tiny" / "config.json");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = dropout;
  return cfg;
}

model::QAOutput run(model::BertForQuestionAnswering& m, std::map<std::string, at::Tensor>& b) {
  return m->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
                    b.at("end_positions"));
}

// The loss from fp32 logits, as the fused model computes it (and autocast
// does): an unfused model with bf16 weights would otherwise take its
// cross-entropy in bf16, a difference of the loss, not of the layers.
model::QAOutput run_fp32_loss(model::BertForQuestionAnswering& m, std::map<std::string, at::Tensor>& b) {
  auto out = m->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"));
  auto logits = at::stack({out.start_logits, out.end_logits}, -1).to(at::kFloat);
  return model::qa_output(logits, b.at("start_positions"), b.at("end_positions"));
}

// The unfused model's tensor for a fused model's parameter `name` (its
// query, key and value stacked for the projection).
at::Tensor unfused_of(torch::OrderedDict<std::string, at::Tensor>& unfused, const std::string& name,
                      bool grad) {
  auto get = [&](const std::string& n) { return grad ? unfused[n].grad() : unfused[n].detach(); };
  for (const char* kind : {".weight", ".bias"}) {
    const std::string fused = std::string("attention.self.qkv") + kind;
    if (!name.ends_with(fused)) continue;
    auto stem = name.substr(0, name.size() - fused.size()) + "attention.self.";
    return at::cat({get(stem + "query" + kind), get(stem + "key" + kind), get(stem + "value" + kind)}, 0);
  }
  return get(name);
}

// Parameters whose gradient is zero in exact arithmetic (model parity's
// list: a key bias, the last output LayerNorm bias and qa_outputs.bias shift
// what softmax or cross-entropy ignores): rounding noise on both sides.
bool zero_gradient(const std::string& name) {
  return name.ends_with("attention.self.key.bias") || name == "qa_outputs.bias" ||
         name == "bert.encoder.layer.1.output.LayerNorm.bias";
}

// --fused's model: packed QKV and the fused kernels.
EnginePolicy fused_engine() {
  EnginePolicy e;
  e.kernels = EnginePolicy::Kernels::Fused;
  e.qkv = EnginePolicy::Qkv::Packed;
  return e;
}

struct Pair {
  model::BertForQuestionAnswering unfused{nullptr}, fused{nullptr};
};

// Both models from one seed: the fused one draws the same numbers (its
// stacked projection draws query's, key's and value's in turn).
Pair seeded_pair(double dropout, at::ScalarType dtype) {
  Pair p;
  torch::manual_seed(11);
  p.unfused = model::BertForQuestionAnswering(tiny_config(dropout));
  torch::manual_seed(11);
  p.fused = model::BertForQuestionAnswering(tiny_config(dropout), fused_engine());
  p.unfused->to(dtype);
  p.fused->to(dtype);
  p.unfused->train();
  p.fused->train();
  return p;
}

struct Tolerance {
  double logits_abs, grad_rel;
};

// Forward and backward of both on the reference batch (padding included):
// logits, loss, and every gradient of the fused model against the unfused
// model's (the projection's against query's, key's and value's stacked).
void check_equal(Pair& p, Tolerance tol, uint64_t seed = 0) {
  auto batch = ref_tensors("model_tiny_batch.safetensors");
  torch::manual_seed(seed);
  auto a = run_fp32_loss(p.unfused, batch);
  torch::manual_seed(seed);
  auto b = run_fp32_loss(p.fused, batch);
  INFO("logits: " << max_abs_diff(b.start_logits, a.start_logits) << ", " << max_abs_diff(b.end_logits, a.end_logits));
  CHECK(max_abs_diff(b.start_logits, a.start_logits) < tol.logits_abs);
  CHECK(max_abs_diff(b.end_logits, a.end_logits) < tol.logits_abs);
  const double la = a.loss.item<double>(), lb = b.loss.item<double>();
  INFO("loss " << lb << " vs " << la);
  CHECK(std::abs(la - lb) <= tol.logits_abs * std::abs(la));
  a.loss.backward();
  b.loss.backward();
  auto unfused = p.unfused->named_parameters();
  size_t compared = 0;
  for (auto& item : p.fused->named_parameters()) {
    const auto& name = item.key();
    INFO("gradient of " << name);
    REQUIRE(item.value().grad().defined());
    auto want = unfused_of(unfused, name, true);
    REQUIRE(want.sizes() == item.value().grad().sizes());
    if (name.ends_with("qkv.bias")) {
      // The key bias's third is rounding noise on both sides (zero_gradient).
      const int64_t h = want.size(0) / 3;
      for (int64_t part : {0, 2})
        CHECK(rel_diff(item.value().grad().narrow(0, part * h, h), want.narrow(0, part * h, h)) < tol.grad_rel);
    } else if (!zero_gradient(name)) {
      INFO("relative difference " << rel_diff(item.value().grad(), want));
      CHECK(rel_diff(item.value().grad(), want) < tol.grad_rel);
    }
    ++compared;
  }
  CHECK(compared + 4 * static_cast<size_t>(p.fused->config().num_hidden_layers) == unfused.size());
}

}  // namespace

TEST_CASE("the fused model draws the unfused model's weights from the same seed", "[model][fused]") {
  auto p = seeded_pair(0.0, at::kFloat);
  auto unfused = p.unfused->named_parameters();
  for (auto& item : p.fused->named_parameters()) {
    INFO(item.key());
    CHECK(at::equal(item.value(), unfused_of(unfused, item.key(), false)));
  }
  // One projection instead of three per layer; everything else by the same names.
  CHECK(p.fused->named_parameters().contains("bert.encoder.layer.0.attention.self.qkv.weight"));
  CHECK_FALSE(p.fused->named_parameters().contains("bert.encoder.layer.0.attention.self.query.weight"));
}

TEST_CASE("fused equals unfused in fp32: logits, loss, every gradient", "[model][fused]") {
  at::set_num_threads(1);
  auto p = seeded_pair(0.0, at::kFloat);
  // fp32: the fused path adds each bias after its GEMM rather than inside it
  // and multiplies Q, K and V in one GEMM of another shape, which changes
  // the rounding order only (~1e-7 relative per op); 1e-5 on O(1) logits and
  // 1e-4 relative on gradient norms (model parity's figures against Hugging
  // Face) are far below what a wrong term or a swapped projection gives.
  check_equal(p, {1e-5, 1e-4});
}

TEST_CASE("fused equals unfused in fp32 with dropout on: the same masks from the same generator",
          "[model][fused]") {
  at::set_num_threads(1);
  auto p = seeded_pair(0.1, at::kFloat);
  // The composite draws its dropout mask as at::dropout does on the CPU (a
  // bernoulli_ over the same shape, at the same point of the forward), so
  // with the same seed both models drop the same elements; a mask drawn
  // differently would move the logits by O(0.1), far beyond 1e-5.
  check_equal(p, {1e-5, 1e-4}, 5);
}

TEST_CASE("fused equals unfused with bf16 weights", "[model][fused]") {
  at::set_num_threads(1);
  auto p = seeded_pair(0.0, at::kBFloat16);
  // Both in bf16 throughout (no autocast), the loss from fp32 logits: each
  // bias is rounded to bf16 after its own addition instead of inside the
  // GEMM, one extra rounding of 2^-9 relative per site. Forward, that left
  // the logits equal here (2e-2 allows for other CPUs); backward, the bias
  // and LayerNorm gradients are sums over every token whose terms largely
  // cancel, so the terms' bf16 rounding shows as up to 6 % of the small sum
  // (measured; weight gradients under 2 %). 1e-1 still catches a wrong term
  // or a swapped projection, which moves them by O(1).
  check_equal(p, {2e-2, 1e-1});
}

TEST_CASE("a Hugging Face checkpoint loads into the fused model: transformers' logits and gradients",
          "[model][fused][checkpoint]") {
  at::set_num_threads(1);
  model::BertForQuestionAnswering m(tiny_config(), fused_engine());
  auto report = model::load_hf_checkpoint(*m, reference_dir() / "model_tiny");
  CHECK(report.initialised.empty());
  CHECK(report.skipped.empty());
  m->train();
  auto batch = ref_tensors("model_tiny_batch.safetensors");
  auto ref = ref_tensors("model_tiny_out.safetensors");
  auto out = run(m, batch);
  // Model parity's tolerances (test_model_parity.cpp).
  CHECK(max_abs_diff(out.start_logits, ref.at("start_logits")) < 1e-5);
  CHECK(max_abs_diff(out.end_logits, ref.at("end_logits")) < 1e-5);
  CHECK(std::abs(out.loss.item<double>() - ref.at("loss").item<double>()) <= 1e-5 * ref.at("loss").item<double>());
  out.loss.backward();
  // The projection's gradient split back is transformers' query, key and
  // value gradients (the key bias's is rounding noise on both sides).
  auto g = m->named_parameters()["bert.encoder.layer.0.attention.self.qkv.weight"].grad().chunk(3, 0);
  CHECK(rel_diff(g[0], ref.at("grad.bert.encoder.layer.0.attention.self.query.weight")) < 1e-4);
  CHECK(rel_diff(g[1], ref.at("grad.bert.encoder.layer.0.attention.self.key.weight")) < 1e-4);
  CHECK(rel_diff(g[2], ref.at("grad.bert.encoder.layer.0.attention.self.value.weight")) < 1e-4);
  auto dense = m->named_parameters()["bert.encoder.layer.1.intermediate.dense.bias"].grad();
  CHECK(rel_diff(dense, ref.at("grad.bert.encoder.layer.1.intermediate.dense.bias")) < 1e-4);
}

TEST_CASE("the fused model saves the checkpoint it loaded: Hugging Face's names and bytes",
          "[model][fused][checkpoint]") {
  model::BertForQuestionAnswering fused(tiny_config(), fused_engine()), unfused(tiny_config());
  model::load_hf_checkpoint(*fused, reference_dir() / "model_tiny");
  model::load_hf_checkpoint(*unfused, reference_dir() / "model_tiny");
  hpcbench::test::TempDir tmp;
  model::save_checkpoint(*fused, tmp.path / "fused.safetensors");
  model::save_checkpoint(*unfused, tmp.path / "unfused.safetensors");
  // The file the unfused model writes, byte for byte.
  CHECK(hpcbench::read_file(tmp.path / "fused.safetensors") == hpcbench::read_file(tmp.path / "unfused.safetensors"));
  // And the input's tensors, by name and value.
  auto saved = model::read_safetensors(tmp.path / "fused.safetensors");
  auto input = model::read_safetensors(reference_dir() / "model_tiny" / "model.safetensors");
  std::set<std::string> want;
  for (auto& [k, v] : input)
    if (!k.ends_with("position_ids") && !k.ends_with("token_type_ids")) want.insert(k);
  std::set<std::string> got;
  for (auto& [k, v] : saved) got.insert(k);
  CHECK(got == want);
  for (auto& k : want) {
    INFO(k);
    CHECK(at::equal(saved.at(k), input.at(k)));
  }
}

TEST_CASE("a checkpoint without a key projection is refused naming the tensor", "[model][fused][checkpoint]") {
  auto input = model::read_safetensors(reference_dir() / "model_tiny" / "model.safetensors");
  input.erase("bert.encoder.layer.1.attention.self.key.weight");
  hpcbench::test::TempDir tmp;
  model::write_safetensors(input, tmp.path / "no_key.safetensors");
  model::BertForQuestionAnswering m(tiny_config(), fused_engine());
  CHECK_THROWS_WITH(model::load_hf_checkpoint(*m, tmp.path / "no_key.safetensors"),
                    Catch::Contains("bert.encoder.layer.1.attention.self.key.weight"));
}
