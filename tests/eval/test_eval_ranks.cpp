// Evaluation sharded over ranks must be the single process's evaluation:
// the same weights give the same predictions, EM/F1 and validation loss
// whether one rank or several (an uneven split and a sharded strategy
// included) run the forward passes, and its time is recorded apart.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <cmath>
#include <tuple>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

const std::string kCommon =
    " --model bert-tiny --max-seq-length 128 --doc-stride 32 --dropout 0 --seed 5 --precision fp32 --device cpu"
    " --threads 1 --timing-warmup-steps 0 --cache-dir none --vocab ";

struct Eval {
  nlohmann::json result, evaluation, predictions;
  std::string csv;
};

// Evaluates `weights` on the v1.1 sample. The run takes one optimizer step,
// the first of the warm-up, whose learning rate is 0: every run evaluates
// exactly these weights, whatever its strategy computed as gradients.
Eval evaluate(const fs::path& dir, const std::string& name, const fs::path& weights, const std::string& args) {
  auto results = dir / ("results-" + name);
  auto r = test::run_command(bin() + " run" + kCommon + test::vocab_file() + " --checkpoint " + weights.string() +
                             " --max-steps 1 --warmup-ratio 0.5 --synthetic-samples 8 --batch-size 2 --eval-data " +
                             test::squad_file("dev-v1.1-sample.json") + " " + args + " --run-name " + name +
                             " --results-dir " + results.string());
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  Eval e;
  auto run = nlohmann::json::parse(test::slurp(results / name / "run.json"));
  e.result = run["result"];
  e.evaluation = run["evaluation"];
  e.predictions = nlohmann::json::parse(test::slurp(results / name / "predictions.json"));
  e.csv = test::slurp(results / name / "summary.csv");
  return e;
}

// Weights that answer some questions right, so that EM and F1 are not 0;
// trained once for all the test cases.
fs::path trained_weights() {
  static test::TempDir dir;
  auto weights = dir.path / "trained.safetensors";
  if (fs::exists(weights)) return weights;
  auto r = test::run_command(bin() + " run" + kCommon + test::vocab_file() + " --train-data " + test::squad_file("dev-v1.1-sample.json") +
                             " --batch-size 16 --max-steps 60 --lr 2e-3 --warmup-ratio 0.1 --run-name train"
                             " --results-dir " + (dir.path / "results-train").string() + " --save-checkpoint " +
                             weights.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return weights;
}

size_t differing(const nlohmann::json& a, const nlohmann::json& b) {
  size_t n = 0;
  for (auto& [id, text] : a.items()) n += !b.contains(id) || b[id] != text;
  return n;
}

}  // namespace

TEST_CASE("evaluation over 2 and 4 ranks, and under zero-3, equals the single rank's") {
  test::TempDir dir;
  auto weights = trained_weights();
  // One window per forward: every run computes each window's logits with the
  // same kernels on the same shapes, so they agree bit for bit and the
  // predictions must be identical, not merely close.
  auto one = evaluate(dir.path, "one", weights, "--strategy baseline --eval-batch-size 1");
  const int64_t windows = one.evaluation["features"].get<int64_t>();
  INFO("windows " << windows << ", EM " << one.result["exact_match"] << ", F1 " << one.result["f1"]);
  REQUIRE(one.predictions.size() == one.evaluation["examples"].get<size_t>());
  // The weights must have learnt something for equal metrics to mean much.
  REQUIRE(one.result["f1"].get<double>() > 0);
  // Uneven splits, with padding to drop inside the gathered rows and not
  // only at their end (2 ranks: one short share; 4 ranks: two or three).
  REQUIRE(windows % 2 == 1);
  REQUIRE((windows % 4 == 1 || windows % 4 == 2));
  CHECK(one.evaluation["ranks"] == 1);

  for (auto [name, args, ranks] : {std::tuple{"ddp2", "--strategy ddp --nproc-per-node 2", 2},
                                   std::tuple{"ddp4", "--strategy ddp --nproc-per-node 4", 4},
                                   std::tuple{"zero3", "--strategy zero --zero-stage 3 --nproc-per-node 2", 2}}) {
    INFO(name);
    auto many = evaluate(dir.path, name, weights, std::string(args) + " --eval-batch-size 1");
    CHECK(many.evaluation["ranks"] == ranks);
    CHECK(many.evaluation["features"] == windows);
    CHECK(differing(one.predictions, many.predictions) == 0);
    CHECK(many.predictions.size() == one.predictions.size());
    CHECK(many.result["exact_match"] == one.result["exact_match"]);
    CHECK(many.result["f1"] == one.result["f1"]);
    // Summed in another order (per rank, then over ranks): equal to rounding.
    CHECK(many.result["val_loss"].get<double>() ==
          Approx(one.result["val_loss"].get<double>()).epsilon(1e-12));
  }
}

TEST_CASE("evaluation over 4 ranks in batches with short tails matches one rank; its time is recorded apart") {
  test::TempDir dir;
  auto weights = trained_weights();
  auto one = evaluate(dir.path, "one", weights, "--strategy baseline --eval-batch-size 16");
  auto four = evaluate(dir.path, "four", weights, "--strategy ddp --nproc-per-node 4 --eval-batch-size 16");
  const auto windows = one.evaluation["features"].get<int64_t>();
  INFO("windows " << windows);
  REQUIRE((windows % 4 == 1 || windows % 4 == 2));  // short shares: short batch tails
  // Other batch shapes may round a logit differently, which can turn a near
  // tie; a window misplaced by the gather or the batching turns many answers.
  CHECK(differing(one.predictions, four.predictions) <= one.predictions.size() / 100);
  CHECK(four.result["val_loss"].get<double>() == Approx(one.result["val_loss"].get<double>()).epsilon(1e-5));
  CHECK(four.result["f1"].get<double>() == Approx(one.result["f1"].get<double>()).margin(1.0));

  for (auto* run : {&one, &four}) {
    auto& r = run->result;
    CHECK(r["eval_load_s"].get<double>() > 0);
    CHECK(r["eval_forward_s"].get<double>() > 0);
    CHECK(r["eval_postprocess_s"].get<double>() > 0);
    CHECK(r["eval_metric_s"].get<double>() >= 0);
    // Training time is its steps' alone: one short step, far below the
    // forward over the whole dev set.
    CHECK(r["train_time_s"].get<double>() < r["eval_forward_s"].get<double>());
    auto header = run->csv.substr(0, run->csv.find('\n'));
    CHECK(header.find(",eval_forward_s,") != std::string::npos);
    CHECK(header.find(",eval_postprocess_s,") != std::string::npos);
    CHECK(header.find(",eval_metric_s,") != std::string::npos);
  }
}
