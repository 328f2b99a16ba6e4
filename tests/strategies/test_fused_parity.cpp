// --fused through the binary: the fused model (one QKV projection, the fused
// kernels' CPU composites) trains as the unfused one under the baseline and
// ddp (2 Gloo ranks), dropout off; under bf16 its weights are resident in
// bf16 with fp32 masters, which tracks the autocast run and costs the state
// bytes the memory model says, under every strategy that declares it (on 1
// and 2 ranks, each against its own autocast run); the strategies that cannot
// run it refuse it before anything starts, naming the flag and the reason.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <algorithm>

#include "cli_parity.h"
#include "specs/registry.h"
#include "test_env.h"

using namespace hpcbench;
using test::parity::compare;
using test::parity::kCommon;
using test::parity::require_same;
using test::parity::run;

namespace {

const std::string kSteps = " --max-steps 10";
const std::string kTwo = " --nproc-per-node 2";

double state_bytes(const test::parity::Run& r) { return r.json["result"]["model_state_bytes"].get<double>(); }
double theory_bytes(const test::parity::Run& r) {
  return r.json["result"]["model_state_theory_bytes"].get<double>();
}

void check_losses_close(const test::parity::Run& got, const test::parity::Run& want, double rel,
                        const std::string& what) {
  REQUIRE(got.losses.size() == want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) {
    INFO(what << ": step " << i + 1 << " loss " << got.losses[i] << " vs " << want.losses[i]);
    CHECK(std::abs(got.losses[i] - want.losses[i]) <= rel * std::abs(want.losses[i]));
  }
}

}  // namespace

TEST_CASE("--fused in fp32: baseline and ddp train as the unfused baseline", "[strategies][fused]") {
  test::TempDir dir;
  auto base = run(dir.path, "base", "--strategy baseline --batch-size 4" + kSteps);
  REQUIRE(base.losses.size() == 10);
  // The same weights (the fused model draws them from the same seed) and the
  // same arithmetic up to rounding order (a bias added after its GEMM, one
  // GEMM for Q, K and V): the ddp test's 1e-5 holds over ten steps.
  auto fused = run(dir.path, "fused", "--strategy baseline --batch-size 4 --fused" + kSteps);
  require_same(fused, base, "baseline --fused");
  auto ddp = run(dir.path, "ddp-fused", "--strategy ddp --batch-size 2 --fused" + kTwo + kSteps);
  require_same(ddp, base, "ddp --fused on 2 ranks");
  // The checkpoint it saved is in Hugging Face's names (query, key, value).
  CHECK(fused.params.count("bert.encoder.layer.0.attention.self.query.weight") == 1);
  CHECK(fused.params.count("bert.encoder.layer.0.attention.self.qkv.weight") == 0);
  // fp32 weights: no masters, the replicated 16 bytes a parameter.
  CHECK(state_bytes(fused) == state_bytes(base));
}

TEST_CASE("--fused in bf16: bf16-resident weights with fp32 masters track the autocast run",
          "[strategies][fused]") {
  test::TempDir dir;
  const std::string bf16 = " --precision bf16";
  auto autocast = run(dir.path, "autocast", "--strategy baseline --batch-size 4" + bf16 + kSteps);
  auto fused = run(dir.path, "fused-bf16", "--strategy baseline --batch-size 4 --fused" + bf16 + kSteps);
  // Autocast keeps the residual stream, LayerNorm and softmax in fp32, where
  // the resident model rounds its activations to bf16 (8 bits of mantissa,
  // 2^-9 relative) at every op; the optimizer steps fp32 masters in both, so
  // the difference does not compound through the weights. Measured: at most
  // 4.6e-4 relative on the loss over ten steps (3.3e-4 on the weights);
  // 3e-3 leaves room for other CPUs' summation orders while a missing update
  // (masters not copied back) or a broken kernel moves the loss by more
  // within a few steps (it falls by 7 % over the ten).
  check_losses_close(fused, autocast, 3e-3, "baseline --fused bf16 against autocast bf16");
  // The saved weights are the fp32 masters, close to autocast's.
  auto d = compare(fused.params, autocast.params);
  INFO("global relative difference of the weights " << d.global_rel);
  CHECK(d.global_rel < 1e-3);
  CHECK(fused.params.at("qa_outputs.weight").scalar_type() == at::kFloat);

  // bf16 weights and gradients beside the fp32 masters and Adam's moments
  // (the fused master step reads the bf16 gradients: no fp32 copy of them):
  // 16 bytes a parameter, as autocast's fp32 weights, gradients and moments,
  // measured as the memory model says.
  CHECK(theory_bytes(fused) == theory_bytes(autocast));
  CHECK(state_bytes(fused) == theory_bytes(fused));
  CHECK(state_bytes(autocast) == theory_bytes(autocast));

  // ddp on two ranks averages bf16 gradients (its buckets take the
  // parameters' dtype): one more bf16 rounding of each gradient than the
  // baseline's (measured: 1e-4 relative on the loss), inside the same 3e-3.
  auto ddp = run(dir.path, "ddp-fused-bf16", "--strategy ddp --batch-size 2 --fused" + bf16 + kTwo + kSteps);
  check_losses_close(ddp, fused, 3e-3, "ddp --fused bf16 against baseline --fused bf16");
  CHECK(state_bytes(ddp) == theory_bytes(ddp));  // the buckets are the gradients' memory: each counted once
  // zero and fsdp: their bf16 compute copies are the resident weights.
  for (auto& [name, args] : std::vector<std::pair<std::string, std::string>>{
           {"zero1", "--strategy zero --zero-stage 1"}, {"fsdp", "--strategy fsdp"}}) {
    auto r = run(dir.path, name + "-fused-bf16", args + " --batch-size 2 --fused" + bf16 + kTwo + kSteps);
    check_losses_close(r, fused, 3e-3, name + " --fused bf16 against baseline --fused bf16");
  }
}

TEST_CASE("strategies that cannot run --fused refuse it before starting, naming the flag and the reason",
          "[strategies][fused]") {
  test::TempDir dir;
  auto refused = [&](const std::string& args, const std::string& reason) {
    auto r = test::run_command(test::parity::bin() + " run" + kCommon + " --max-steps 1 --fused " + args +
                               " --results-dir " + (dir.path / "results").string());
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--fused") != std::string::npos);
    CHECK(r.output.find(reason) != std::string::npos);
    CHECK(test::entries(dir.path / "results") == 0);  // nothing started, nothing written
  };
  refused("--strategy dp --dp-replicas 2 --batch-size 2", "use --strategy ddp");
  refused("--strategy baseline --batch-size 4 --precision fp16", "--precision fp16");
}

// Every strategy that declares --fused, on 1 and 2 Gloo ranks, against the
// unfused autocast baseline on the same global batch of 4 rows (a 2-rank
// data-parallel run reads 2 rows a rank; a tensor group reads the same 4).
TEST_CASE("--fused bf16 under every strategy that declares it stays within its tolerance of unfused autocast",
          "[strategies][fused]") {
  test::TempDir dir;
  const std::string bf16 = " --precision bf16", steps = " --max-steps 6";
  const std::vector<std::pair<std::string, std::string>> layouts = {
      {"ddp", "--strategy ddp"},
      {"zero1", "--strategy zero --zero-stage 1"},
      {"zero2", "--strategy zero --zero-stage 2"},
      {"zero3", "--strategy zero --zero-stage 3"},
      {"fsdp-full", "--strategy fsdp --sharding full"},
      {"fsdp-grad-op", "--strategy fsdp --sharding grad-op"},
      {"fsdp-hybrid", "--strategy fsdp --sharding hybrid --shard-group-size 1"},
      {"tensor", "--strategy tensor"},  // --tp-size 0: every rank of the node, 1 then 2
  };
  std::vector<std::pair<std::string, std::string>> cases = {{"baseline", "--strategy baseline --batch-size 4"}};
  for (auto& [name, args] : layouts)
    for (int ranks : {1, 2})
      cases.emplace_back(name + "-" + std::to_string(ranks),
                         args + " --nproc-per-node " + std::to_string(ranks) +
                             (ranks == 1 || name == "tensor" ? " --batch-size 4" : " --batch-size 2"));
  // The pipeline's stages step their own fp32 masters: one stage under
  // GPipe, and two stages on two ranks under 1F1B with accumulation (2 rows
  // a micro-step, twice), activations crossing between them in bf16. Each
  // of its ranks reads the whole global batch.
  cases.emplace_back("pipeline-1-gpipe", "--strategy pipeline --nproc-per-node 1 --batch-size 4 --micro-batches 2");
  cases.emplace_back("pipeline-2-1f1b-accum",
                     "--strategy pipeline --nproc-per-node 2 --batch-size 2 --grad-accum 2 --micro-batches 2 "
                     "--schedule 1f1b");
  // Every registered strategy that declares the fused model is run here.
  for (const auto* s : strategies::specs()) {
    if (!s->engine(*s->defaults()).fused.supported) continue;
    INFO(s->name() << " declares --fused but is not run under it here");
    CHECK(std::any_of(cases.begin(), cases.end(),
                      [&](const auto& c) { return c.second.find("--strategy " + s->name()) != std::string::npos; }));
  }
  auto autocast = run(dir.path, "autocast", "--strategy baseline --batch-size 4" + bf16 + steps);
  REQUIRE(autocast.losses.size() == 6);
  for (const auto& [name, args] : cases) {
    INFO(name);
    auto fused = run(dir.path, name + "-fused", args + " --fused" + bf16 + steps);
    REQUIRE(fused.json["result"]["fused"] == 1);
    double worst = 0;
    for (size_t i = 0; i < fused.losses.size() && i < autocast.losses.size(); ++i)
      worst = std::max(worst, std::abs(fused.losses[i] - autocast.losses[i]) / std::abs(autocast.losses[i]));
    auto d = compare(fused.params, autocast.params);
    std::printf("%s --fused bf16 vs autocast baseline: loss %.2e, weights %.2e\n", name.c_str(), worst, d.global_rel);
    // The resident model rounds its activations to bf16 where autocast keeps
    // the residual stream, LayerNorm and softmax in fp32 (both step fp32
    // masters, so the difference does not compound through the weights);
    // on 2 ranks the gradients are also reduced in bf16, and a tensor shard
    // sums its partial products in bf16. Measured over these 17 cases
    // (bert-tiny, six steps): at most 3.2e-4 relative on the loss (tensor on
    // 1 rank) and 2.6e-4 on the weights. The bounds, the baseline case's 3e-3
    // and 1e-3, leave room for other CPUs' summation orders; a tensor shard
    // whose masters are not copied back after the step leaves them (measured:
    // 2.5e-2 on the loss by step five, 2 ranks), as does a pipeline stage's
    // (2.5e-2 by step five, at one stage and at two). What they do not see: a tensor shard cutting the packed QKV in T
    // row blocks instead of per third. Its load and its gather are then the
    // same permutation of the rows, a model as valid as the right one from
    // another random draw, and bert-tiny's logits at initialisation are near
    // zero whatever the encoder computes (measured with that cut: 4.5e-4 on
    // the loss, inside the bound). test_tensor_layers.cpp's fused case
    // catches it, from a reference checkpoint against the unsplit model.
    check_losses_close(fused, autocast, 3e-3, name + " --fused bf16 against autocast bf16");
    // A tensor shard and a pipeline stage step their masters by the fused
    // master-weight AdamW, as the replicas do: what the run counts is its
    // spec's 16 bytes a parameter (fp32 gradient copies would add 4).
    if (name.starts_with("tensor") || name.starts_with("pipeline")) CHECK(state_bytes(fused) == theory_bytes(fused));
    INFO("global relative difference of the weights " << d.global_rel);
    CHECK(d.global_rel < 1e-3);
  }
}
