// Activation checkpointing's saving, measured: the bytes a training forward
// leaves alive for backward, counted exactly by a CPU allocator, with and
// without recomputation, against the memory model's activation term
// (lib/specs/model_shape.h, docs/memory.md). Without recomputation each
// encoder layer keeps its Korthikanti et al. activations; with it, only its
// input (e·s·b·h bytes). The rest (embeddings, QA head, the loss) is the same
// either way and drops out of the difference.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "counting_allocator.h"
#include "model/bert.h"
#include "model/bert_modules.h"
#include "specs/model_shape.h"
#include "train/setup.h"

using namespace hpcbench;

namespace {

struct Kept {
  int64_t off = 0, on = 0;
};

// Bytes alive after forward minus before it, for one model and batch.
Kept forward_bytes(const model::BertConfig& cfg, int64_t rows, int64_t seq, bool padded) {
  auto& alloc = test::counting();
  torch::manual_seed(0);
  model::BertForQuestionAnswering m(cfg);
  m->train();
  auto ids = at::randint(1000, cfg.vocab_size, {rows, seq}, at::kLong);
  auto types = at::zeros({rows, seq}, at::kLong);
  auto mask = at::ones({rows, seq}, at::kLong);
  if (padded) mask.narrow(1, seq - 8, 8).zero_();
  auto start = at::randint(0, seq, {rows}, at::kLong), end = at::randint(0, seq, {rows}, at::kLong);
  Kept k;
  for (bool recompute : {false, true, false, true}) {  // the second round after every lazy buffer exists
    m->bert()->set_activation_checkpointing(recompute);
    const int64_t before = alloc.now();
    auto out = m->forward(ids, types, mask, start, end);
    (recompute ? k.on : k.off) = alloc.now() - before;
    out.loss.backward();
    for (auto& p : m->parameters()) p.mutable_grad() = at::Tensor();
  }
  return k;
}

}  // namespace

TEST_CASE("recomputation keeps only each layer's input: the bytes forward leaves for backward against the memory model") {
  auto cfg = model::BertConfig::preset("bert-tiny");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0;  // no masks: the formula's d = 0
  const int64_t b = 4, s = 128, e = 4;                               // fp32
  const auto m = train::model_shape(cfg);
  const double input = static_cast<double>(e * s * b * cfg.hidden_size);
  for (bool padded : {false, true}) {
    // SDPA runs its fused CPU kernel (flash attention) with a padding mask
    // or without one: it keeps one number a row, not the s² scores
    // (run.json's sdpa_backend says which kernel a run took).
    const double layer = strategies::layer_activation_bytes(m, b, s, e, /*dropout=*/false, /*scores=*/false);
    const auto k = forward_bytes(cfg, b, s, padded);
    const double saved = static_cast<double>(k.off - k.on);
    const double model_saved = static_cast<double>(cfg.num_hidden_layers) * (layer - input);
    INFO("padded " << padded << ": kept without " << k.off << " B, with " << k.on << " B; saved " << saved
                   << " B, the model's " << model_saved << " B");
    CHECK(k.on < k.off);
    // The model counts the tensors autograd must keep; the kernels keep a
    // few small ones beside them (the attention kernel's row statistics,
    // the mask), hence 2 %, not exact (0.2 % at this shape).
    CHECK(saved == Approx(model_saved).epsilon(0.02));
  }
}
