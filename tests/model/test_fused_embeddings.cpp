// The embeddings as one op under --fused (kernels/embedding_layernorm.h):
// on the CPU its composite is the unfused module's operations, so the output
// and all five weights' gradients equal the module's bit for bit, with a
// padding id and repeated ids in the batch (the padding row gets no
// gradient). bf16 weights stay within a stated bound of the fp32 module.
// The check can fail: the adds in another order, or the wrong padding_idx,
// are caught by it.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "kernels/embedding_layernorm.h"
#include "model/bert_modules.h"

using namespace hpcbench;
namespace K = hpcbench::kernels;

namespace {

model::BertConfig small_config() {
  model::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 40;
  c.max_position_embeddings = 16;
  c.type_vocab_size = 2;
  c.hidden_dropout_prob = 0;
  c.pad_token_id = 3;
  return c;
}

// Every weight random, the padding row too (the module zeroes it at init;
// a non-zero row shows its gradient is withheld, not merely zero).
void randomize(model::BertEmbeddings& m, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters()) p.copy_(at::randn(p.sizes(), gen, p.options().dtype(at::kFloat)));
}

struct Batch {
  at::Tensor ids, types, dy;
};

// Three sequences of 7 with the padding id (3) at their ends and ids
// repeated within and across sequences, so that gradient rows accumulate.
Batch batch(int64_t hidden) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  Batch b;
  b.ids = at::randint(0, 12, {3, 7}, gen, at::TensorOptions().dtype(at::kLong));
  b.ids.index_put_({at::indexing::Slice(), at::indexing::Slice(5, at::indexing::None)}, 3);
  b.types = at::randint(0, 2, {3, 7}, gen, at::TensorOptions().dtype(at::kLong));
  b.dy = at::randn({3, 7, hidden}, gen);
  return b;
}

using Result = std::map<std::string, at::Tensor>;

Result run(model::BertEmbeddings& m, const Batch& b) {
  m->zero_grad();
  at::Tensor out = m->forward(b.ids, b.types);
  out.backward(b.dy.to(out.scalar_type()));
  return {{"out", out.detach()},
          {"word", m->word_embeddings->weight.grad()},
          {"type", m->token_type_embeddings->weight.grad()},
          {"pos", m->position_embeddings->weight.grad()},
          {"ln_w", m->LayerNorm->weight.grad()},
          {"ln_b", m->LayerNorm->bias.grad()}};
}

// The op called directly, with `padding_idx`, on the module's weights.
Result run_op(model::BertEmbeddings& m, const Batch& b, int64_t padding_idx) {
  m->zero_grad();
  at::Tensor out = K::embedding_layernorm_autograd(
      b.ids, b.types, m->word_embeddings->weight, m->token_type_embeddings->weight, m->position_embeddings->weight,
      m->LayerNorm->weight, m->LayerNorm->bias, 1e-12, padding_idx);
  out.backward(b.dy);
  return {{"out", out.detach()}, {"word", m->word_embeddings->weight.grad().clone()}};
}

// max |a - b| / max |b|, in double.
double scaled_error(const at::Tensor& a, const at::Tensor& b) {
  auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  return (a64 - b64).abs().max().item<double>() / std::max(b64.abs().max().item<double>(), 1e-30);
}

}  // namespace

TEST_CASE("fused embeddings equal the module bit for bit in fp32, forward and every gradient") {
  const auto c = small_config();
  model::BertEmbeddings unfused(c), fused(c, EnginePolicy::Kernels::Fused);
  randomize(unfused, 1);
  randomize(fused, 1);
  const Batch b = batch(c.hidden_size);
  const Result want = run(unfused, b), got = run(fused, b);
  for (const auto& [name, t] : want) {
    INFO(name);
    REQUIRE(got.at(name).defined());
    CHECK(at::equal(got.at(name), t));
  }
  // The padding row: no gradient on either path, though its id is in the batch.
  CHECK(want.at("word")[c.pad_token_id].abs().max().item<double>() == 0.0);
  // The fused module ran the op (its node), not the modules.
  at::Tensor out = fused->forward(b.ids, b.types);
  REQUIRE(out.grad_fn());
  CHECK(out.grad_fn()->name().find("EmbeddingLayerNormFn") != std::string::npos);
  // The composite alone: the module's forward, with LayerNorm's statistics.
  auto comp = K::composite::embedding_layernorm(
      b.ids, b.types, unfused->word_embeddings->weight, unfused->token_type_embeddings->weight,
      unfused->position_embeddings->weight, unfused->LayerNorm->weight, unfused->LayerNorm->bias, c.layer_norm_eps);
  CHECK(at::equal(comp.out, want.at("out")));
  CHECK(comp.mean.numel() == 21);
  CHECK(comp.rstd.numel() == 21);
}

TEST_CASE("the bit-for-bit check catches the adds reordered and a wrong padding_idx") {
  const auto c = small_config();
  model::BertEmbeddings m(c);
  randomize(m, 2);
  const Batch b = batch(c.hidden_size);
  const Result want = run(m, b);
  {
    torch::NoGradGuard no_grad;
    auto positions = at::arange(7, at::kLong).unsqueeze(0);
    // word + (type + pos): the same sum in exact arithmetic, rounded otherwise.
    auto reordered = at::layer_norm(
        m->word_embeddings(b.ids) + (m->token_type_embeddings(b.types) + m->position_embeddings(positions)), {40},
        m->LayerNorm->weight, m->LayerNorm->bias, c.layer_norm_eps);
    CHECK_FALSE(at::equal(reordered, want.at("out")));
    CHECK(scaled_error(reordered, want.at("out")) < 1e-5);  // only rounding apart
  }
  // The op with the right padding_idx matches; with none, the padding row
  // gets the gradient of its tokens and the check fails.
  CHECK(at::equal(run_op(m, b, c.pad_token_id).at("word"), want.at("word")));
  CHECK_FALSE(at::equal(run_op(m, b, -1).at("word"), want.at("word")));
}

// bf16 weights (the fused model's resident weights) against the fp32 module
// on the same values rounded to bf16. Each bf16 rounding is within 2^-9 of
// the value; the two adds, the output and each gradient round once more, and
// the lookups' backward sums up to 21 rows in bf16 (CPU index_add in the
// dtype): 2^-5 of the tensor's largest element bounds them, where a missing
// add or a wrong row is of order 1.
TEST_CASE("fused embeddings with bf16 weights are within 2^-5 of fp32") {
  const auto c = small_config();
  model::BertEmbeddings ref(c), fused(c, EnginePolicy::Kernels::Fused);
  randomize(ref, 3);
  randomize(fused, 3);
  fused->to(at::kBFloat16);
  {
    torch::NoGradGuard no_grad;
    auto params = fused->parameters();
    auto ref_params = ref->parameters();
    for (size_t i = 0; i < params.size(); ++i) ref_params[i].copy_(params[i].to(at::kFloat));
  }
  const Batch b = batch(c.hidden_size);
  const Result want = run(ref, b), got = run(fused, b);
  for (const auto& [name, t] : want) {
    INFO(name);
    REQUIRE(got.at(name).scalar_type() == at::kBFloat16);
    const double err = scaled_error(got.at(name), t);
    INFO("scaled error " << err);
    CHECK(err < 1.0 / 32);
  }
  CHECK(got.at("word")[c.pad_token_id].abs().max().item<double>() == 0.0);
}
