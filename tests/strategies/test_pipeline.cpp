// The pipeline (lib/strategies/pipeline/stages.h, lib/strategies/pipeline/runner.h)
// over 2 and 4 Gloo ranks (copies of this executable), GPipe and 1F1B, several
// micro-batch counts: each stage runs the same forwards and backwards in the
// same order as torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B
// (tests/reference/pipeline_reference.py), and its gradients and the
// micro-batches' losses are theirs and the unsplit model's, from the same
// weights and batch. Also: recomputation changes no gradient, the measured
// bubble is a bubble, and cuts that cannot be made are refused.
#include "test_catch.h"
#include <nlohmann/json.hpp>

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
#include "strategies/pipeline/cut.h"
#include "strategies/pipeline/runner.h"
#include "strategies/pipeline/stages.h"
#include "test_env.h"

using namespace hpcbench;
using namespace hpcbench::strategies::pipeline;
namespace fs = std::filesystem;
using Tensors = std::map<std::string, at::Tensor>;

namespace {

fs::path ref_dir() { return test::reference_dir() / "pipeline"; }

struct Run {
  std::string schedule;
  int micro;
  bool recompute = false;
  std::string name(int stages) const {
    return "pp" + std::to_string(stages) + "_" + schedule + "_m" + std::to_string(micro) + (recompute ? "_ckpt" : "");
  }
};

// The reference's runs (pipeline_reference.py's RUNS) and, on 2 stages, one
// with recomputation.
std::vector<Run> runs(int stages) {
  if (stages == 2) return {{"gpipe", 2}, {"gpipe", 4}, {"1f1b", 2}, {"1f1b", 4}, {"1f1b", 4, true}};
  return {{"gpipe", 4}, {"gpipe", 8}, {"1f1b", 4}, {"1f1b", 8}};
}

model::BertForQuestionAnswering whole_model() {
  auto cfg = model::BertConfig::from_json(ref_dir() / "model" / "config.json");
  model::BertForQuestionAnswering m(cfg);
  model::load_hf_checkpoint(*m, ref_dir() / "model");
  m->train();
  return m;
}

train::Batch reference_batch() {
  auto b = model::read_safetensors(ref_dir() / "batch.safetensors");
  return {b.at("input_ids"), b.at("token_type_ids"), b.at("attention_mask"), b.at("start_positions"),
          b.at("end_positions")};
}

std::string joined(const std::vector<Action>& order) {
  std::string s;
  // Piece by piece: `(c ? "" : " ") + std::string` draws a false -Wrestrict
  // from GCC 12 (libstdc++'s char_traits.h; GCC bug 105651).
  for (auto& a : order) {
    if (!s.empty()) s += ' ';
    s += to_string(a);
  }
  return s;
}

// Gradients to 1e-5 of each tensor's norm, as the tensor-parallel test:
// torch's pipeline itself is 3e-7 from the unsplit model here (micro-batches
// of the same rows, gradients summed over them in another order); a
// micro-batch's gradient lost, doubled or sent to the wrong stage moves a
// gradient by a large fraction of its norm. Parameters whose gradient is
// zero in exact arithmetic hold rounding noise on both sides: their norm is
// checked instead (test_model_parity.cpp's rule).
bool zero_gradient(const std::string& name) {
  return name.ends_with("attention.self.key.bias") || name == "grad.qa_outputs.bias" ||
         name == "grad.bert.encoder.layer.3.output.LayerNorm.bias";
}

void require_grads(const Tensors& got, const Tensors& want, double global, const std::string& what) {
  size_t n = 0;
  for (auto& [k, g] : got) {
    if (!k.starts_with("grad.")) continue;
    INFO(what << ": " << k);
    REQUIRE(want.count(k));
    ++n;
    if (zero_gradient(k))
      CHECK(g.norm().item<double>() < 1e-6 * global);
    else
      CHECK(test::rel_diff(g, want.at(k)) < 1e-5);
  }
  CHECK(n > 0);
}

}  // namespace

// One rank: its stage of the reference model, one step of every run for its
// stage count, results per run.
TEST_CASE("pipeline worker", "[.][pp_worker]") {
  const fs::path out = std::getenv("HPCBENCH_PP_WORKER");
  at::set_num_threads(1);
  auto layout = dist::detect_layout();
  dist::CommOptions opts;
  opts.timeout = std::chrono::seconds(60);
  dist::Comm comm(layout, c10::Device(c10::kCPU), opts);
  const int rank = layout.rank, stages = layout.world_size;
  for (const auto& run : runs(stages)) {
    auto whole = whole_model();
    auto counts = stage_layer_counts(whole->config().num_hidden_layers, stages);
    strategies::pipeline::PipelineStage stage(*whole, rank, counts);
    stage->set_activation_checkpointing(run.recompute);
    StageLinks links{&comm, rank > 0 ? rank - 1 : -1, rank + 1 < stages ? rank + 1 : -1};
    StageRunner runner(stage, links, {parse_schedule(run.schedule)}, c10::Device(c10::kCPU));
    auto batch = reference_batch();
    const int64_t rows = batch.size() / run.micro;
    std::vector<train::Batch> micro;
    for (int m = 0; m < run.micro; ++m) micro.push_back(batch.slice(m * rows, (m + 1) * rows));
    auto loss = runner.step(micro, 1.0);
    Tensors r;
    for (auto& p : stage->named_parameters()) r["grad." + p.key()] = p.value().grad();
    if (stage->last()) {
      r["losses"] = at::stack(runner.micro_losses());
      r["loss"] = loss.reshape({1});
    }
    auto t = runner.timeline();
    r["window_ms"] = at::tensor({t.end - t.begin}, at::kDouble);
    r["busy_ms"] = at::tensor({runner.bubble().busy}, at::kDouble);
    r["spans"] = at::tensor({static_cast<int64_t>(t.busy.size())});
    auto name = run.name(stages) + "_rank" + std::to_string(rank);
    model::write_safetensors(r, out / (name + ".safetensors"));
    std::ofstream(out / (name + ".order")) << joined(runner.ran());
    comm.barrier();
  }
}

TEST_CASE("pipeline over 2 and 4 stages, GPipe and 1F1B: torch.distributed.pipelining's order, gradients and losses") {
  at::set_num_threads(1);
  // The unsplit model on the whole batch: the gradients of the mean loss.
  auto whole = whole_model();
  auto b = reference_batch();
  auto o = whole->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
  o.loss.backward();
  Tensors unsplit;
  double global = 0;
  for (auto& p : whole->named_parameters()) {
    unsplit["grad." + p.key()] = p.value().grad();
    global += p.value().grad().to(at::kDouble).pow(2).sum().item<double>();
  }
  global = std::sqrt(global);
  const double whole_loss = o.loss.item<double>();

  test::TempDir dir;
  for (int stages : {2, 4}) {
    auto out = dir.path / ("pp" + std::to_string(stages));
    auto res = test::run_ranks(stages, "[pp_worker]", "HPCBENCH_PP_WORKER", out.string(), out);
    INFO(res.output);
    REQUIRE(res.exit_code == 0);
    Tensors plain_grads;  // the 1F1B M=4 run's, for the recomputation check
    for (const auto& run : runs(stages)) {
      Tensors all_grads;
      for (int rank = 0; rank < stages; ++rank) {
        auto name = run.name(stages) + "_rank" + std::to_string(rank);
        auto ref_name = Run{run.schedule, run.micro}.name(stages) + "_rank" + std::to_string(rank);
        INFO(name);
        auto got = model::read_safetensors(out / (name + ".safetensors"));
        auto want = model::read_safetensors(ref_dir() / (ref_name + ".safetensors"));
        auto ref_order = nlohmann::json::parse(test::slurp(ref_dir() / (ref_name + ".json")))["order"];
        std::string want_order;
        for (auto& a : ref_order) {
          if (!want_order.empty()) want_order += ' ';
          want_order += a.get<std::string>();
        }
        // The order each stage ran is torch's, and the schedule generator's.
        CHECK(test::slurp(out / (name + ".order")) == want_order);
        CHECK(joined(stage_order(parse_schedule(run.schedule), rank, stages, run.micro)) == want_order);
        require_grads(got, want, global, name + " vs torch.distributed.pipelining");
        require_grads(got, unsplit, global, name + " vs the unsplit model");
        for (auto& [k, g] : got)
          if (k.starts_with("grad.")) all_grads[k] = g;
        if (rank == stages - 1) {
          CHECK(test::rel_diff(got.at("losses"), want.at("losses")) < 1e-6);
          CHECK(std::abs(got.at("loss").item<double>() - whole_loss) < 1e-6 * whole_loss);
        }
        // The measured bubble is a part of the step: 2M computations, busy
        // within the window, and some idle time on every stage of a pipeline.
        CHECK(got.at("spans").item<int64_t>() == 2 * run.micro);
        CHECK(got.at("busy_ms").item<double>() > 0);
        CHECK(got.at("busy_ms").item<double>() <= got.at("window_ms").item<double>());
      }
      // Together the stages hold every parameter once.
      CHECK(all_grads.size() == 71);
      if (run.schedule == "1f1b" && run.micro == 4 && !run.recompute) plain_grads = all_grads;
      if (run.recompute) {
        INFO("1F1B with activation checkpointing vs without");
        REQUIRE(!plain_grads.empty());
        for (auto& [k, g] : all_grads) CHECK(test::rel_diff(g, plain_grads.at(k)) < 1e-6);
      }
    }
  }
}

TEST_CASE("pipeline cuts: balanced by default, explicit counts, and the cuts that cannot be made") {
  CHECK(stage_layer_counts(12, 3) == std::vector<int64_t>{4, 4, 4});
  CHECK(stage_layer_counts(12, 5) == std::vector<int64_t>{3, 3, 2, 2, 2});
  CHECK(stage_layer_counts(12, 3, {2, 6, 4}) == std::vector<int64_t>{2, 6, 4});
  CHECK(parse_stage_layers("4,4,4") == std::vector<int64_t>{4, 4, 4});
  CHECK(parse_stage_layers("3/1") == std::vector<int64_t>{3, 1});  // as run records write it
  CHECK(parse_stage_layers("").empty());
  CHECK_THROWS_WITH(stage_layer_counts(2, 4),
                    Catch::Contains("--stages 4") && Catch::Contains("2 encoder layers"));
  CHECK_THROWS_WITH(stage_layer_counts(12, 3, {4, 4}), Catch::Contains("2 counts for 3 stages"));
  CHECK_THROWS_WITH(stage_layer_counts(12, 3, {4, 4, 5}), Catch::Contains("add up to 13"));
  CHECK_THROWS_WITH(stage_layer_counts(12, 3, {6, 6, 0}), Catch::Contains("at least one encoder layer"));
  CHECK_THROWS_WITH(parse_stage_layers("4,x,4"), Catch::Contains("\"x\" is not a whole number"));
  // A stage holds the whole model's own modules, named as in a checkpoint.
  auto cfg = model::BertConfig::preset("bert-tiny");
  model::BertForQuestionAnswering whole(cfg);
  const std::vector<int64_t> halves{1, 1};
  strategies::pipeline::PipelineStage first(*whole, 0, halves), last(*whole, 1, halves);
  auto a = first->named_parameters(), z = last->named_parameters();
  CHECK(a.contains("bert.embeddings.word_embeddings.weight"));
  CHECK(a.contains("bert.encoder.layer.0.output.dense.weight"));
  CHECK(!a.contains("qa_outputs.weight"));
  CHECK(z.contains("bert.encoder.layer.1.output.dense.weight"));
  CHECK(z.contains("qa_outputs.weight"));
  CHECK(z["qa_outputs.weight"].is_same(whole->qa_outputs()->weight));
  CHECK(a.size() + z.size() == whole->named_parameters().size());
}
