// Our BertForQuestionAnswering against Hugging Face's (tests/reference/
// model_parity.py) with identical weights and batch, fp32 on CPU: logits,
// loss, every gradient, and the parameters after three AdamW steps.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdlib>
#include <fmt/format.h>
#include <set>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "model_test_util.h"
#include "train/optimizer.h"

using namespace hpcbench;
using hpcbench::test::max_abs_diff;
using hpcbench::test::ref_tensors;
using hpcbench::test::reference_dir;
using hpcbench::test::rel_diff;

namespace {

// The optimizer set-up of model_parity.py.
constexpr double kLr = 1e-3, kWd = 0.01, kClip = 1.0;
constexpr int64_t kWarmup = 2, kTotal = 5, kSteps = 3;

model::BertForQuestionAnswering load_case(const std::string& name) {
  auto dir = reference_dir() / ("model_" + name);
  auto cfg = model::BertConfig::from_json(dir / "config.json");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.0;  // deterministic, as the reference
  model::BertForQuestionAnswering m(cfg);
  auto report = model::load_hf_checkpoint(*m, dir);
  REQUIRE(report.initialised.empty());
  REQUIRE(report.skipped.empty());
  m->train();
  return m;
}

// Parameters whose gradient is zero in exact arithmetic, so that both sides
// hold rounding noise alone (~1e-9) and no relative comparison means
// anything: a key bias adds the same amount to all scores of a query (softmax
// ignores a shift), and qa_outputs.bias and the last layer's output LayerNorm
// bias shift all logits of a row equally (so does cross-entropy).
bool zero_gradient(const std::string& name, int64_t layers) {
  return name.ends_with("attention.self.key.bias") || name == "qa_outputs.bias" ||
         name == fmt::format("bert.encoder.layer.{}.output.LayerNorm.bias", layers - 1);
}

model::QAOutput run(model::BertForQuestionAnswering& m, std::map<std::string, at::Tensor>& b) {
  return m->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
                    b.at("end_positions"));
}

void check_case(const std::string& name) {
  at::set_num_threads(1);
  auto m = load_case(name);
  auto batch = ref_tensors("model_" + name + "_batch.safetensors");
  auto ref = ref_tensors("model_" + name + "_out.safetensors");

  // Our parameter names are Hugging Face's state_dict keys, exactly.
  std::set<std::string> ours, theirs;
  for (const auto& p : m->named_parameters()) ours.insert(p.key());
  for (const auto& [k, v] : model::read_safetensors(reference_dir() / ("model_" + name) / "model.safetensors"))
    if (!k.ends_with("position_ids") && !k.ends_with("token_type_ids")) theirs.insert(k);
  CHECK(ours == theirs);

  auto out = run(m, batch);
  // fp32 logits of O(1): 1e-5 absolute leaves room for the different (but
  // equally exact) summation orders of our SDPA call and Hugging Face's.
  CHECK(max_abs_diff(out.start_logits, ref.at("start_logits")) < 1e-5);
  CHECK(max_abs_diff(out.end_logits, ref.at("end_logits")) < 1e-5);
  const double loss = out.loss.item<double>(), ref_loss = ref.at("loss").item<double>();
  CHECK(std::abs(loss - ref_loss) <= 1e-6 * std::abs(ref_loss));

  out.loss.backward();
  const int64_t layers = m->config().num_hidden_layers;
  double global = 0;
  for (const auto& [k, g] : ref)
    if (k.starts_with("grad.")) global += g.to(at::kDouble).pow(2).sum().item<double>();
  global = std::sqrt(global);
  // Gradients pass back through every layer, each adding fp32 rounding
  // (~1e-7 relative per op) in an order that differs from Hugging Face's;
  // 1e-4 relative (as a norm over the tensor, so that near-zero elements do
  // not dominate) is far below what a wrong term would give (> 1e-2).
  for (const auto& p : m->named_parameters()) {
    INFO("gradient of " << p.key());
    REQUIRE(p.value().grad().defined());
    if (zero_gradient(p.key(), layers)) {
      CHECK(p.value().grad().norm().item<double>() < 1e-6 * global);
      CHECK(ref.at("grad." + p.key()).norm().item<double>() < 1e-6 * global);
    } else {
      CHECK(rel_diff(p.value().grad(), ref.at("grad." + p.key())) < 1e-4);
    }
  }
  // The padding row of the word embeddings gets no gradient (padding_idx).
  auto& we = m->named_parameters()["bert.embeddings.word_embeddings.weight"];
  CHECK(we.grad()[m->config().pad_token_id].abs().max().item<double>() == 0.0);
  m->zero_grad(true);

  std::map<std::string, at::Tensor> before;
  for (const auto& p : m->named_parameters()) before[p.key()] = p.value().detach().clone();
  train::OptimizerConfig ocfg{kLr, kWd, 0.9, 0.999, 1e-8};
  auto opt = train::make_adamw(*m, ocfg);
  train::LinearSchedule sched(*opt, kLr, kWarmup, kTotal);
  auto params = m->parameters();
  auto lrs = ref.at("lr");
  auto norms = ref.at("grad_norm");
  for (int64_t s = 0; s < kSteps; ++s) {
    run(m, batch).loss.backward();
    double norm = train::clip_grad_norm(params, kClip).item<double>();
    INFO("step " << s);
    CHECK(std::abs(norm - norms[s].item<double>()) <= 1e-5 * norms[s].item<double>());
    CHECK(std::abs(opt->param_groups()[0].options().get_lr() - lrs[s].item<double>()) < 1e-15);
    opt->step();
    sched.step();
    opt->zero_grad(true);
  }
  // Adam divides by sqrt(v): the update is ~lr per element whatever the
  // gradient's size, so parameters inherit the gradients' 1e-5-level
  // differences only through the few elements whose gradient is near zero.
  double lr_sum = 0;
  for (int64_t s = 0; s < kSteps; ++s) lr_sum += lrs[s].item<double>();
  for (const auto& p : m->named_parameters()) {
    INFO("parameter after 3 steps: " << p.key());
    if (zero_gradient(p.key(), layers)) {
      // Adam turns noise into steps of up to a few lr: only bound them.
      CHECK(max_abs_diff(p.value(), before[p.key()]) <= 3 * lr_sum);
      CHECK(max_abs_diff(ref.at("step3." + p.key()), before[p.key()]) <= 3 * lr_sum);
    } else {
      CHECK(rel_diff(p.value(), ref.at("step3." + p.key())) < 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("random bert-tiny matches Hugging Face: logits, loss, gradients, AdamW steps", "[model][parity]") {
  check_case("tiny");
}

TEST_CASE("pretrained all-MiniLM-L6-v2 matches Hugging Face", "[model][parity]") { check_case("minilm"); }

TEST_CASE("the original MiniLM checkpoint loads: bare names, pooler skipped, QA head initialised", "[model][checkpoint]") {
  // The pretrained model ships inside the reference venv's site-packages;
  // the reference script says where.
  std::filesystem::path dir = hpcbench::read_file(reference_dir() / "model_minilm_source.txt");
  torch::manual_seed(0);
  model::BertForQuestionAnswering m(model::BertConfig::from_json(dir / "config.json"));
  auto report = model::load_hf_checkpoint(*m, dir / "model.safetensors");
  CHECK(report.skipped == std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight"});
  CHECK(report.initialised == std::vector<std::string>{"qa_outputs.weight", "qa_outputs.bias"});
  auto file = model::read_safetensors(dir / "model.safetensors");
  auto params = m->named_parameters();
  size_t compared = 0;
  for (const auto& [k, v] : file) {
    if (k.starts_with("pooler.") || k.ends_with("position_ids")) continue;
    INFO(k);
    REQUIRE(params.contains("bert." + k));
    CHECK(at::equal(params["bert." + k], v));
    ++compared;
  }
  CHECK(compared + 2 == params.size());
  // The fresh head: Hugging Face's init, normal(0, 0.02) weight, zero bias.
  CHECK(params["qa_outputs.bias"].abs().max().item<double>() == 0.0);
  double sd = params["qa_outputs.weight"].std().item<double>();
  CHECK(sd > 0.015);
  CHECK(sd < 0.025);
}

TEST_CASE("a torch.save pytorch_model.bin loads the same tensors as the safetensors", "[model][checkpoint]") {
  auto cfg = model::BertConfig::from_json(reference_dir() / "model_tiny" / "config.json");
  model::BertForQuestionAnswering a(cfg), b(cfg);
  model::load_hf_checkpoint(*a, reference_dir() / "model_tiny.bin");
  model::load_hf_checkpoint(*b, reference_dir() / "model_tiny" / "model.safetensors");
  auto pa = a->named_parameters();
  for (const auto& p : b->named_parameters()) {
    INFO(p.key());
    CHECK(at::equal(pa[p.key()], p.value()));
  }
}

TEST_CASE("Hugging Face from_pretrained reads what save_checkpoint writes", "[model][checkpoint]") {
  const char* py = std::getenv("HPCBENCH_PY");
  REQUIRE(py);
  auto cfg = model::BertConfig::from_json(reference_dir() / "model_tiny" / "config.json");
  torch::manual_seed(99);
  model::BertForQuestionAnswering m(cfg);  // fresh weights: not the reference's
  m->eval();
  hpcbench::test::TempDir tmp;
  auto folder = tmp.path / "ours";
  model::save_checkpoint(*m, folder);
  auto batch_file = reference_dir() / "model_tiny_batch.safetensors";
  auto out_file = tmp.path / "hf_logits.safetensors";
  auto cmd = fmt::format("\"{}\" \"{}\" \"{}\" \"{}\" \"{}\"", py,
                         (hpcbench::test::source_dir() / "tests/reference/model_load_check.py").string(),
                         folder.string(), batch_file.string(), out_file.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto hf = model::read_safetensors(out_file);
  auto batch = model::read_safetensors(batch_file);
  torch::NoGradGuard no_grad;
  auto out = m->forward(batch.at("input_ids"), batch.at("token_type_ids"), batch.at("attention_mask"));
  CHECK(max_abs_diff(out.start_logits, hf.at("start_logits")) < 1e-5);
  CHECK(max_abs_diff(out.end_logits, hf.at("end_logits")) < 1e-5);
}
