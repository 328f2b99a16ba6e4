// The model library without the reference: configuration, presets, Hugging
// Face's initialisation, dropout, safetensors and the loader's errors, the
// optimizer's parameter groups and schedule.
#include "test_catch.h"

#include <ATen/ATen.h>

#include <fstream>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "model/bert.h"
#include "model/bert_modules.h"
#include "model/checkpoint.h"
#include "model_test_util.h"
#include "train/optimizer.h"

using namespace hpcbench;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

model::BertConfig small_config() {
  model::BertConfig c;
  c.vocab_size = 100;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 16;
  c.name = "small-test";
  return c;
}

struct Batch {
  at::Tensor ids, types, mask;
};
Batch small_batch() {
  torch::manual_seed(5);
  auto ids = at::randint(1, 100, {2, 12}, at::kLong);
  auto mask = at::ones({2, 12}, at::kLong);
  mask[1].slice(0, 8).zero_();
  return {ids, at::zeros({2, 12}, at::kLong), mask};
}

int64_t count_parameters(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

TEST_CASE("config.json of bert-base-uncased is read", "[model][config]") {
  auto c = model::BertConfig::from_json(test::test_data() / "bert-base-uncased" / "config.json");
  CHECK(c.vocab_size == 30522);
  CHECK(c.hidden_size == 768);
  CHECK(c.num_hidden_layers == 12);
  CHECK(c.num_attention_heads == 12);
  CHECK(c.intermediate_size == 3072);
  CHECK(c.max_position_embeddings == 512);
  CHECK(c.layer_norm_eps == 1e-12);
  CHECK(c.hidden_act == "gelu");
  CHECK(c.name == "bert-base-uncased");
}

TEST_CASE("bad config.json is a UserError naming the file and field", "[model][config]") {
  test::TempDir tmp;
  auto p = tmp.path / "config.json";
  CHECK_THROWS_WITH(model::BertConfig::from_json(p), Contains(p.string()));
  write_file_atomic(p, "{\"hidden_size\": 100, \"num_attention_heads\": 12}");
  CHECK_THROWS_WITH(model::BertConfig::from_json(p), Contains("not a multiple"));
  write_file_atomic(p, "{\"hidden_size\": \"big\"}");
  CHECK_THROWS_WITH(model::BertConfig::from_json(p), Contains("hidden_size"));
  write_file_atomic(p, "{\"model_type\": \"roberta\"}");
  CHECK_THROWS_WITH(model::BertConfig::from_json(p), Contains("roberta"));
  write_file_atomic(p, "{\"hidden_act\": \"relu\"}");
  CHECK_THROWS_AS(model::BertConfig::from_json(p), UserError);
  write_file_atomic(p, "{not json");
  CHECK_THROWS_WITH(model::BertConfig::from_json(p), Contains("not valid JSON"));
}

TEST_CASE("presets have Hugging Face's parameter counts", "[model][config]") {
  // Counted from transformers' BertForQuestionAnswering (on the meta device).
  CHECK(model::BertConfig::preset("bert-base-uncased").num_parameters() == 108893186);
  CHECK(model::BertConfig::preset("bert-large-uncased").num_parameters() == 334094338);
  CHECK(model::BertConfig::preset("bert-tiny").num_parameters() == 4369666);
  for (const auto& name : {"bert-tiny", "bert-mini"}) {
    auto c = model::BertConfig::preset(name);
    CHECK(c.name == name);
    model::BertForQuestionAnswering m(c);
    CHECK(count_parameters(*m) == c.num_parameters());
  }
  auto small = model::BertConfig::preset("bert-small");
  CHECK((small.num_hidden_layers == 4 && small.hidden_size == 512 && small.num_attention_heads == 8 &&
         small.intermediate_size == 2048));
  auto medium = model::BertConfig::preset("bert-medium");
  CHECK((medium.num_hidden_layers == 8 && medium.hidden_size == 512));
  CHECK_THROWS_AS(model::BertConfig::preset("bert-huge"), UserError);
  CHECK_THROWS_WITH(model::BertConfig::preset("bert-huge"), Contains("bert-huge") && Contains("bert-tiny") &&
                                                                Contains("bert-large-uncased"));
}

TEST_CASE("initialisation follows Hugging Face's _init_weights", "[model][init]") {
  torch::manual_seed(42);
  auto c = model::BertConfig::preset("bert-mini");
  model::BertForQuestionAnswering m(c);
  for (const auto& p : m->named_parameters()) {
    INFO(p.key());
    const auto& t = p.value();
    if (p.key().find("LayerNorm.weight") != std::string::npos) {
      CHECK(at::all(t == 1).item<bool>());
    } else if (p.key().ends_with(".bias")) {
      CHECK(at::all(t == 0).item<bool>());
    } else {
      // normal(0, 0.02): with >= 512 draws the sample std is within a few %.
      auto w = p.key().ends_with("word_embeddings.weight") ? t.slice(0, 1) : t;
      CHECK(std::abs(w.mean().item<double>()) < 0.003);
      CHECK(w.std().item<double>() == Approx(0.02).epsilon(0.06));
    }
  }
  auto we = m->named_parameters()["bert.embeddings.word_embeddings.weight"];
  CHECK(at::all(we[c.pad_token_id] == 0).item<bool>());
  // Drawn from the global generator: the same seed gives the same model.
  torch::manual_seed(42);
  model::BertForQuestionAnswering again(c);
  CHECK(at::equal(again->named_parameters()["bert.encoder.layer.3.output.dense.weight"],
                  m->named_parameters()["bert.encoder.layer.3.output.dense.weight"]));
}

TEST_CASE("dropout applies in train mode only", "[model][dropout]") {
  torch::manual_seed(1);
  auto c = small_config();
  model::BertForQuestionAnswering m(c);
  auto b = small_batch();
  m->train();
  auto a1 = m->forward(b.ids, b.types, b.mask).start_logits;
  auto a2 = m->forward(b.ids, b.types, b.mask).start_logits;
  CHECK(!at::allclose(a1, a2));
  m->eval();
  auto e1 = m->forward(b.ids, b.types, b.mask).start_logits;
  auto e2 = m->forward(b.ids, b.types, b.mask).start_logits;
  CHECK(at::equal(e1, e2));
  // The attention dropout alone changes the output too.
  auto c2 = c;
  c2.hidden_dropout_prob = 0;
  torch::manual_seed(1);
  model::BertForQuestionAnswering m2(c2);
  m2->train();
  CHECK(!at::allclose(m2->forward(b.ids, b.types, b.mask).start_logits,
                      m2->forward(b.ids, b.types, b.mask).start_logits));
}

TEST_CASE("padding is masked: padded tokens do not change the others' logits", "[model][mask]") {
  torch::manual_seed(3);
  model::BertForQuestionAnswering m(small_config());
  m->eval();
  auto b = small_batch();
  auto out = m->forward(b.ids, b.types, b.mask);
  auto ids2 = b.ids.clone();
  ids2[1].slice(0, 8).fill_(7);
  auto out2 = m->forward(ids2, b.types, b.mask);
  CHECK(test::max_abs_diff(out.start_logits[1].slice(0, 0, 8), out2.start_logits[1].slice(0, 0, 8)) < 1e-6);
  // int32 inputs give the same result as int64.
  auto out3 = m->forward(b.ids.to(at::kInt), b.types.to(at::kInt), b.mask.to(at::kInt));
  CHECK(at::equal(out.end_logits, out3.end_logits));
}

TEST_CASE("a batch without padding runs unmasked, with the same logits as with an all-ones mask", "[model][mask]") {
  torch::manual_seed(3);
  model::BertForQuestionAnswering m(small_config());
  m->eval();
  auto b = small_batch();
  auto ones = at::ones_like(b.mask);
  CHECK_FALSE(model::key_mask_of(ones).defined());
  CHECK(model::key_mask_of(b.mask).defined());
  CHECK_FALSE(model::key_mask_of(at::Tensor()).defined());
  auto with_mask = m->forward(b.ids, b.types, ones);
  auto without = m->forward(b.ids, b.types, at::Tensor());
  CHECK(test::max_abs_diff(with_mask.start_logits, without.start_logits) < 1e-6);
  // Masking does change them (the comparison can fail).
  auto masked = m->forward(b.ids, b.types, b.mask);
  CHECK(test::max_abs_diff(masked.start_logits[1].slice(0, 0, 8), without.start_logits[1].slice(0, 0, 8)) > 1e-4);
  // Training (dropout inside attention) runs unmasked too.
  m->train();
  auto pos = at::zeros({2}, at::kLong);
  auto o = m->forward(b.ids, b.types, ones, pos, pos);
  CHECK(o.loss.isfinite().item<bool>());
}

TEST_CASE("QA loss ignores positions outside the sequence", "[model][loss]") {
  torch::manual_seed(4);
  model::BertForQuestionAnswering m(small_config());
  m->eval();
  auto b = small_batch();
  auto start = at::tensor(std::vector<int64_t>{3, 50}), end = at::tensor(std::vector<int64_t>{4, 60});
  auto o = m->forward(b.ids, b.types, b.mask, start, end);
  // Row 1 is ignored (clamped to 12 = ignore_index): the loss is row 0's.
  auto ls = at::log_softmax(o.start_logits[0], 0), le = at::log_softmax(o.end_logits[0], 0);
  double expect = -(ls[3].item<double>() + le[4].item<double>()) / 2;
  CHECK(o.loss.item<double>() == Approx(expect).epsilon(1e-6));
  CHECK(!m->forward(b.ids, b.types, b.mask).loss.defined());
  auto too_long = at::ones({1, 17}, at::kLong);
  CHECK_THROWS_WITH(m->forward(too_long, {}, {}), Contains("17") && Contains("16"));
}

TEST_CASE("safetensors round trip keeps dtypes, shapes and bytes", "[model][safetensors]") {
  test::TempDir tmp;
  std::map<std::string, at::Tensor> t{
      {"f32", at::randn({3, 4})},
      {"f16", at::randn({5}).to(at::kHalf)},
      {"bf16", at::randn({2, 2, 2}).to(at::kBFloat16)},
      {"i64", at::arange(7, at::kLong)},
      {"scalar", at::tensor(3.5)},
      {"empty", at::empty({0, 4})},
      {"strided", at::randn({4, 6}).t()},
  };
  auto p = tmp.path / "x.safetensors";
  model::write_safetensors(t, p);
  auto back = model::read_safetensors(p);
  REQUIRE(back.size() == t.size());
  for (const auto& [k, v] : t) {
    INFO(k);
    CHECK(back.at(k).scalar_type() == v.scalar_type());
    CHECK(at::equal(back.at(k), v));
  }
  // The 8-byte header length and the data start 8-byte aligned.
  std::ifstream in(p, std::ios::binary);
  uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), 8);
  CHECK(len % 8 == 0);
}

TEST_CASE("bad checkpoints are UserErrors naming the file and the tensor", "[model][checkpoint]") {
  test::TempDir tmp;
  auto c = small_config();
  torch::manual_seed(2);
  model::BertForQuestionAnswering m(c);
  auto good = tmp.path / "good.safetensors";
  model::save_checkpoint(*m, good);
  auto bytes = read_file(good);

  SECTION("missing file or folder") {
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*m, tmp.path / "nope.safetensors"), Contains("nope.safetensors"));
    fs::create_directories(tmp.path / "empty");
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*m, tmp.path / "empty"), Contains("model.safetensors"));
  }
  SECTION("truncated data") {
    auto p = tmp.path / "cut.safetensors";
    write_file_atomic(p, std::string_view(bytes).substr(0, bytes.size() - 100));
    CHECK_THROWS_AS(model::read_safetensors(p), UserError);
    CHECK_THROWS_WITH(model::read_safetensors(p), Contains("truncated") && Contains(p.string()) &&
                                                      Contains("qa_outputs"));
  }
  SECTION("truncated header") {
    auto p = tmp.path / "cut.safetensors";
    write_file_atomic(p, std::string_view(bytes).substr(0, 20));
    CHECK_THROWS_WITH(model::read_safetensors(p), Contains("truncated"));
    write_file_atomic(p, std::string_view(bytes).substr(0, 5));
    CHECK_THROWS_WITH(model::read_safetensors(p), Contains("truncated"));
  }
  SECTION("shape mismatch names the tensor and both shapes") {
    auto c2 = c;
    c2.intermediate_size = 48;
    model::BertForQuestionAnswering other(c2);
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*other, good),
                      Contains("bert.encoder.layer.0.intermediate.dense.weight") && Contains("[64, 32]") &&
                          Contains("[48, 32]"));
  }
  SECTION("vocabulary mismatch says so") {
    auto c2 = c;
    c2.vocab_size = 120;
    model::BertForQuestionAnswering other(c2);
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*other, good), Contains("vocabulary of 100"));
    // With a config.json beside the weights, the field is named.
    model::save_checkpoint(*m, tmp.path / "folder");
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*other, tmp.path / "folder"), Contains("vocab_size"));
  }
  SECTION("missing encoder tensor; extra layers") {
    auto t = model::read_safetensors(good);
    t.erase("bert.encoder.layer.1.attention.self.key.bias");
    auto p = tmp.path / "partial.safetensors";
    model::write_safetensors(t, p);
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*m, p), Contains("bert.encoder.layer.1.attention.self.key.bias"));
    auto c1 = c;
    c1.num_hidden_layers = 1;
    model::BertForQuestionAnswering shallow(c1);
    CHECK_THROWS_WITH(model::load_hf_checkpoint(*shallow, good), Contains("bert.encoder.layer.1."));
  }
  SECTION("round trip: a saved model loads back identically; pre-training heads are skipped") {
    auto t = model::read_safetensors(good);
    t["cls.predictions.bias"] = at::zeros({100});
    t["bert.pooler.dense.weight"] = at::zeros({32, 32});
    auto p = tmp.path / "pretraining.safetensors";
    model::write_safetensors(t, p);
    model::BertForQuestionAnswering other(c);
    auto report = model::load_hf_checkpoint(*other, p);
    CHECK(report.skipped.size() == 2);
    CHECK(report.initialised.empty());
    for (const auto& q : m->named_parameters()) CHECK(at::equal(other->named_parameters()[q.key()], q.value()));
  }
}

TEST_CASE("optimizer: Hugging Face's parameter groups and linear schedule", "[model][optimizer]") {
  CHECK(train::decays("bert.encoder.layer.0.attention.self.query.weight"));
  CHECK(train::decays("bert.embeddings.word_embeddings.weight"));
  CHECK(train::decays("qa_outputs.weight"));
  CHECK(!train::decays("qa_outputs.bias"));
  CHECK(!train::decays("bert.embeddings.LayerNorm.weight"));
  CHECK(!train::decays("bert.encoder.layer.3.output.LayerNorm.bias"));

  torch::manual_seed(0);
  model::BertForQuestionAnswering m(small_config());
  train::OptimizerConfig cfg;
  cfg.weight_decay = 0.01;
  auto opt = train::make_adamw(*m, cfg);
  REQUIRE(opt->param_groups().size() == 2);
  auto& g0 = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
  auto& g1 = static_cast<torch::optim::AdamWOptions&>(opt->param_groups()[1].options());
  CHECK(g0.weight_decay() == 0.01);
  CHECK(g1.weight_decay() == 0.0);
  // 3 embeddings + per layer 6 Linear weights; + qa_outputs.weight.
  CHECK(opt->param_groups()[0].params().size() == 3 + 2 * 6 + 1);
  CHECK(opt->param_groups()[0].params().size() + opt->param_groups()[1].params().size() == m->parameters().size());

  train::LinearSchedule s(*opt, 1.0, 2, 6);
  CHECK(g0.lr() == 0.0);  // step 0 of a warm-up, as LambdaLR sets it
  std::vector<double> expect{0.5, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0};
  for (double e : expect) {
    CHECK(s.step() == Approx(e));
    CHECK(g1.lr() == Approx(e));
  }
}

TEST_CASE("clip_grad_norm scales to the max norm and returns the norm before", "[model][optimizer]") {
  auto a = at::zeros({2}).requires_grad_(true), b = at::zeros({1}).requires_grad_(true);
  a.mutable_grad() = at::tensor({3.0f, 0.0f});
  b.mutable_grad() = at::tensor({4.0f});
  CHECK(train::clip_grad_norm({a, b}, 1.0).item<double>() == Approx(5.0));
  CHECK(a.grad()[0].item<double>() == Approx(0.6).epsilon(1e-5));
  CHECK(b.grad()[0].item<double>() == Approx(0.8).epsilon(1e-5));
  CHECK(train::clip_grad_norm({a, b}, 10.0).item<double>() == Approx(1.0).epsilon(1e-5));
  CHECK(b.grad()[0].item<double>() == Approx(0.8).epsilon(1e-5));
}
