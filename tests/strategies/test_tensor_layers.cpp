// Megatron-style tensor parallelism (lib/strategies/tensor/layers.h) over 2 and 4
// Gloo ranks (copies of this executable): logits, loss and every gradient
// equal to the unsplit model's and to DTensor's parallelize_module with
// ColwiseParallel / RowwiseParallel on transformers' model
// (tests/reference/tensor_parallel_reference.py), from the same weights and
// batch; under the fused engine (a packed QKV projection cut per third, the
// fused kernels' CPU composites) too. Also: activation checkpointing changes no gradient, replicated
// parameters get the same gradient on every rank, a shard holds what the
// memory formula counts, and a model whose heads do not divide is refused.
#include "test_catch.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "distributed/launch_env.h"
#include "distributed/process_group.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "model/model_test_util.h"
#include "spawn_ranks.h"
#include "specs/model_shape.h"
#include "strategies/tensor/layers.h"
#include "train/amp.h"

using namespace hpcbench;
namespace fs = std::filesystem;
using Tensors = std::map<std::string, at::Tensor>;

namespace {

fs::path ref_dir() { return test::reference_dir() / "tensor_parallel"; }

// --fused's engine in fp32: the packed QKV projection and the fused kernels.
EnginePolicy fused_engine() {
  EnginePolicy e;
  e.kernels = EnginePolicy::Kernels::Fused;
  e.qkv = EnginePolicy::Qkv::Packed;
  return e;
}

model::BertForQuestionAnswering whole_model(const EnginePolicy& engine = {}) {
  auto cfg = model::BertConfig::from_json(ref_dir() / "model" / "config.json");
  model::BertForQuestionAnswering m(cfg, engine);
  model::load_hf_checkpoint(*m, ref_dir() / "model");
  m->train();
  return m;
}

// The unsplit model's logits, loss and gradients on the reference batch.
Tensors whole_result(bool recompute = false) {
  auto m = whole_model();
  m->bert()->set_activation_checkpointing(recompute);
  auto b = model::read_safetensors(ref_dir() / "batch.safetensors");
  auto o = m->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
                      b.at("end_positions"));
  o.loss.backward();
  Tensors r{{"start_logits", o.start_logits.detach()}, {"end_logits", o.end_logits.detach()},
            {"loss", o.loss.detach().reshape({1})}};
  for (auto& p : m->named_parameters()) r["grad." + p.key()] = p.value().grad();
  return r;
}

// Parameters whose gradient is zero in exact arithmetic (softmax and the
// LayerNorm after the last layer ignore a shift): both sides hold rounding
// noise there, so only its size is checked (test_model_parity.cpp's rule).
bool zero_gradient(const std::string& name) {
  return name.ends_with("attention.self.key.bias") || name == "grad.qa_outputs.bias" ||
         name == "grad.bert.encoder.layer.3.output.LayerNorm.bias";
}

// Logits to 1e-5 absolute (O(1) values, fp32; measured ~6e-8 between the
// unsplit and DTensor runs), the loss to 1e-6 relative, each gradient to 1e-5
// of its norm. A split gives the same products summed in another order
// (partial sums over a rank's columns, then the all-reduce), so fp32
// rounding, ~1e-7 per operation, through four layers: DTensor's split lands
// 1.6e-6 from transformers' unsplit model. A wrong slice, a missing or
// doubled all-reduce or bias moves a gradient by O(1) of its norm.
void require_close(const Tensors& got, const Tensors& want, const std::string& what) {
  INFO(what);
  CHECK(test::max_abs_diff(got.at("start_logits"), want.at("start_logits")) < 1e-5);
  CHECK(test::max_abs_diff(got.at("end_logits"), want.at("end_logits")) < 1e-5);
  CHECK(test::rel_diff(got.at("loss"), want.at("loss")) < 1e-6);
  double global = 0;
  size_t grads = 0;
  for (auto& [k, g] : want)
    if (k.starts_with("grad.")) global += g.to(at::kDouble).pow(2).sum().item<double>();
  global = std::sqrt(global);
  for (auto& [k, g] : want) {
    if (!k.starts_with("grad.") || k.ends_with("position_ids")) continue;
    INFO(k);
    REQUIRE(got.count(k));
    ++grads;
    if (zero_gradient(k)) {
      CHECK(got.at(k).norm().item<double>() < 1e-6 * global);
    } else {
      CHECK(test::rel_diff(got.at(k), g) < 1e-5);
    }
  }
  CHECK(grads == 71);  // every parameter of the 4-layer model
}

Tensors run_tp(const fs::path& dir, int ranks, bool recompute, bool fused = false) {
  auto out = dir / ("tp" + std::to_string(ranks) + (recompute ? "-recompute" : "") + (fused ? "-fused" : ""));
  auto r = test::run_ranks(ranks, "[tp_worker]", "HPCBENCH_TP_WORKER",
                           out.string() + " " + (recompute ? "1" : "0") + " " + (fused ? "1" : "0"), out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto rank0 = model::read_safetensors(out / "rank0.safetensors");
  // Replicated parameters (embeddings, LayerNorms, row-parallel biases, the
  // head) get the same gradient on every rank, bit for bit: the ranks'
  // optimizers then keep them the same without any collective.
  for (int r = 1; r < ranks; ++r) {
    auto other = model::read_safetensors(out / ("rank" + std::to_string(r) + ".safetensors"));
    for (auto& [k, v] : other) {
      if (!k.starts_with("local.") || strategies::tensor::tensor_parallel_dim(k.substr(6)) >= 0) continue;
      INFO("rank " << r << " " << k);
      CHECK(at::equal(v, rank0.at(k)));
    }
  }
  return rank0;
}

}  // namespace

// One rank: the tensor-parallel model from the reference weights, one
// forward and backward of the reference batch, results gathered whole.
TEST_CASE("tensor-parallel worker", "[.][tp_worker]") {
  std::istringstream in(std::getenv("HPCBENCH_TP_WORKER"));
  std::string out;
  int recompute = 0, fused = 0;
  in >> out >> recompute >> fused;
  const auto engine = fused ? fused_engine() : EnginePolicy{};
  at::set_num_threads(1);
  auto layout = dist::detect_layout();
  dist::CommOptions opts;
  opts.timeout = std::chrono::seconds(60);
  auto comm = std::make_shared<dist::Comm>(layout, c10::Device(c10::kCPU), opts);
  auto whole = whole_model(engine);
  strategies::tensor::TensorParallelBertForQuestionAnswering tp(whole->config(), comm, engine);
  strategies::tensor::load_tensor_parallel(*tp, strategies::tensor::named_tensors(*whole));
  tp->set_activation_checkpointing(recompute != 0);
  tp->train();
  auto b = model::read_safetensors(ref_dir() / "batch.safetensors");
  auto o = tp->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
                       b.at("end_positions"));
  o.loss.backward();
  Tensors r{{"start_logits", o.start_logits.detach()}, {"end_logits", o.end_logits.detach()},
            {"loss", o.loss.detach().reshape({1})}};
  for (auto& [k, g] : strategies::tensor::full_state(*tp, /*gradients=*/true)) {
    if (!strategies::tensor::packed_qkv(k)) {
      r["grad." + k] = g;
      continue;
    }
    // The packed gradient in Hugging Face's names, [query; key; value] as the
    // whole fused model stacks them, to compare with the unsplit model's.
    const auto stem = k.substr(0, k.rfind("qkv."));
    const auto leaf = k.ends_with(".bias") ? "bias" : "weight";
    auto parts = g.chunk(3);
    r["grad." + stem + "query." + leaf] = parts[0];
    r["grad." + stem + "key." + leaf] = parts[1];
    r["grad." + stem + "value." + leaf] = parts[2];
  }
  int64_t numel = 0;
  for (auto& p : tp->named_parameters()) {
    r["local." + p.key()] = p.value().grad().contiguous();
    numel += p.value().numel();
  }
  r["numel"] = at::tensor({numel});
  model::write_safetensors(r, fs::path(out) / ("rank" + std::to_string(layout.rank) + ".safetensors"));
}

TEST_CASE("tensor parallelism over 2 and 4 ranks equals the unsplit model and DTensor's ColwiseParallel/RowwiseParallel") {
  at::set_num_threads(1);
  auto whole = whole_result();
  const auto cfg = whole_model()->config();
  test::TempDir dir;
  for (int ranks : {2, 4}) {
    auto tp = run_tp(dir.path, ranks, false);
    auto dtensor = model::read_safetensors(ref_dir() / ("dtensor_tp" + std::to_string(ranks) + ".safetensors"));
    // DTensor itself is the unsplit model to rounding: the bound is not loose.
    require_close(dtensor, whole, "DTensor vs the unsplit model, T=" + std::to_string(ranks));
    require_close(tp, whole, "hpcbench vs the unsplit model, T=" + std::to_string(ranks));
    require_close(tp, dtensor, "hpcbench vs DTensor, T=" + std::to_string(ranks));
    // A shard holds what the memory formula counts (replicated embeddings,
    // head, LayerNorms and row-parallel biases; the rest a T-th).
    strategies::ModelShape shape{cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
                                 cfg.intermediate_size, cfg.max_position_embeddings, cfg.type_vocab_size};
    CHECK(tp.at("numel").item<int64_t>() ==
          shape.embedding_params() + shape.head_params() + shape.layers * shape.layer_params_per_rank(ranks));
  }
  // The comparison can fail: the halves of a column-parallel gradient in
  // the wrong order (a slice given to the wrong rank) are far outside it.
  auto q = whole.at("grad.bert.encoder.layer.0.attention.self.query.weight");
  CHECK(test::rel_diff(at::cat({q.chunk(2)[1], q.chunk(2)[0]}), q) > 0.1);
}

TEST_CASE("tensor parallelism under the fused engine over 2 and 4 ranks equals the unsplit model") {
  at::set_num_threads(1);
  // The unsplit, unfused model: the fused kernels' composites and the one
  // QKV GEMM are the same fp32 arithmetic in another order (1e-7 per
  // operation, as the split's), inside require_close's bounds. Each rank's
  // packed projection must hold its heads of query, of key and of value; a
  // naive cut of the packed rows in T blocks gives rank 0 all of query and
  // half of key at T = 2, which moves every layer's output by O(1).
  auto whole = whole_result();
  test::TempDir dir;
  for (int ranks : {2, 4}) require_close(run_tp(dir.path, ranks, false, true), whole,
                                         "fused hpcbench vs the unsplit model, T=" + std::to_string(ranks));
}

TEST_CASE("tensor parallelism with activation checkpointing: the same gradients") {
  at::set_num_threads(1);
  test::TempDir dir;
  auto plain = run_tp(dir.path, 2, false);
  auto recomputed = run_tp(dir.path, 2, true);
  require_close(recomputed, plain, "T=2 recomputed vs not");
}

TEST_CASE("activation checkpointing of the whole model: gradients equal to without it, dropout and bf16 included") {
  at::set_num_threads(1);
  auto cfg = model::BertConfig::from_json(ref_dir() / "model" / "config.json");
  // Dropout on: the recompute must draw the same masks as the first run.
  cfg.hidden_dropout_prob = 0.1;
  cfg.attention_probs_dropout_prob = 0.1;
  auto b = model::read_safetensors(ref_dir() / "batch.safetensors");
  for (std::string precision : {"fp32", "bf16"}) {
    Tensors grads[2];
    at::Tensor losses[2];
    for (int recompute : {0, 1}) {
      torch::manual_seed(1);
      model::BertForQuestionAnswering m(cfg);
      m->train();
      m->bert()->set_activation_checkpointing(recompute != 0);
      torch::manual_seed(2);
      model::QAOutput o;
      {
        train::AutocastGuard autocast(c10::kCPU, precision);
        o = m->forward(b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
                       b.at("end_positions"));
      }
      o.loss.backward();
      losses[recompute] = o.loss.detach();
      for (auto& p : m->named_parameters()) grads[recompute][p.key()] = p.value().grad().clone();
      // The random stream after the step is the same as without recomputing.
      grads[recompute]["rng"] = at::rand({4});
    }
    INFO(precision);
    CHECK(at::equal(losses[0], losses[1]));
    for (auto& [k, g] : grads[0]) {
      INFO(k);
      // The same operations on the same values: equal to the bit, save for
      // the order in which autograd adds into the layer input's gradient.
      CHECK(test::rel_diff(grads[1].at(k), g) < 1e-6);
    }
  }
}

TEST_CASE("tensor parallelism: which tensors split, and models that cannot be split") {
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.attention.self.query.weight") == 0);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.attention.self.value.bias") == 0);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.intermediate.dense.bias") == 0);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.attention.output.dense.weight") == 1);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.output.dense.weight") == 1);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.output.dense.bias") == -1);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.output.LayerNorm.weight") == -1);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.embeddings.word_embeddings.weight") == -1);
  CHECK(strategies::tensor::tensor_parallel_dim("qa_outputs.weight") == -1);
  CHECK(strategies::tensor::tensor_parallel_dim("bert.encoder.layer.0.attention.self.qkv.weight") == 0);
  CHECK(strategies::tensor::packed_qkv("bert.encoder.layer.0.attention.self.qkv.bias"));
  CHECK_FALSE(strategies::tensor::packed_qkv("bert.encoder.layer.0.attention.self.query.bias"));
  auto tiny = model::BertConfig::preset("bert-tiny");  // 2 heads
  CHECK_NOTHROW(strategies::tensor::check_tensor_parallel(tiny, 2));
  CHECK_THROWS_WITH(strategies::tensor::check_tensor_parallel(tiny, 4),
                    Catch::Contains("--tp-size 4") && Catch::Contains("2 attention heads"));
  auto base = model::BertConfig::preset("bert-base-uncased");  // 12 heads
  CHECK_THROWS_WITH(strategies::tensor::check_tensor_parallel(base, 8), Catch::Contains("12 attention heads"));
  CHECK_THROWS_WITH(strategies::tensor::check_tensor_parallel(base, 0), Catch::Contains("--tp-size 0"));
}
