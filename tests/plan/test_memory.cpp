// A layout's memory per rank against the memory model worked by hand
// (docs/memory.md's table; Korthikanti et al.'s activations), and the
// search's pruning by it.
#include "test_catch.h"

#include "core/error.h"
#include "fixture.h"
#include "plan/memory.h"
#include "plan/search.h"
#include "predict/baseline.h"
#include "specs/label.h"

using namespace hpcbench;

namespace {

plan::Candidate candidate(const std::string& label, bool recompute, int replicas, int64_t rows) {
  return {strategies::parse_label(label, "test"), "bf16", recompute, replicas, rows, 1, ""};
}

}  // namespace

TEST_CASE("memory per rank: the model state by hand and the paper's activations") {
  const auto m = test::tiny_shape();
  const auto l = test::tiny_layout(m, 16);
  const double psi = static_cast<double>(m.parameters());
  REQUIRE(l.parameters == m.parameters());
  const double s = 16, h = 32, a = 2, L = 4;
  // bf16 (e = 2), i = 4h, dropout: s·b·h·(10 + 24/t + 5·a·s/(h·t)) a layer (t = 1).
  auto layer = [&](double b) { return s * b * h * (10 + 24 + 5 * a * s / h); };
  plan::MemoryInputs in{&l, m, {1, 2}, 16, predict::engine_step_options("bf16", {})};

  SECTION("ddp at 2 ranks: 16 bytes a parameter, each rank the activations of its 4 rows") {
    auto u = plan::memory_per_rank(candidate("ddp", false, 2, 4), in);
    CHECK(u.state == Approx(16 * psi));
    CHECK(u.activations == Approx(L * layer(4)));
    auto r = plan::memory_per_rank(candidate("ddp", true, 2, 4), in);
    // Recomputation keeps each layer's input (s·b·h·e) and one layer's whole set.
    CHECK(r.activations == Approx(L * s * 4 * h * 2 + layer(4)));
    CHECK(r.state == Approx(u.state));
  }
  SECTION("tensor tp 2: the shard's 16 bytes a parameter, one replica's activations over its 2 ranks") {
    auto u = plan::memory_per_rank(candidate("tensor:tp-size=2", false, 1, 8), in);
    const double shard = m.embedding_params() + m.head_params() + L * m.layer_params_per_rank(2);
    CHECK(u.state == Approx(16 * shard));
    CHECK(u.activations == Approx(L * layer(8) / 2));
  }
  SECTION("zero 1 in bf16 at 2 ranks: 6Ψ + 12Ψ/N persistent") {
    auto u = plan::memory_per_rank(candidate("zero:stage=1", false, 2, 4), in);
    auto spec = strategies::parse_label("zero:stage=1", "test").memory({l.unit_numel, {1, 2}, 2, 2, false});
    CHECK(spec.persistent == Approx(6 * psi + 12 * psi / 2));
    CHECK(u.state == Approx(spec.total()));
  }
}

TEST_CASE("the search prunes by memory first, counting each refusal; a limit below every need is refused") {
  test::PlanSetup setup;
  auto& r = setup.r;
  const auto& m = setup.m;
  const auto& l = setup.l;
  r.base = test::tiny_baseline(8, 0.5, "bf16");
  const double psi = static_cast<double>(m.parameters());
  const double s = 16, h = 32, L = 4;
  const double layer4 = s * 4 * h * (10 + 24 + 5 * 2 * s / h);
  // ddp's need without recomputation is 16Ψ + L·layer(4): one byte less refuses it and keeps ddp with
  // recomputation (16Ψ + L·s·4·h·2 + layer(4)).
  const double ddp = 16 * psi + L * layer4;
  r.memory_limit = ddp - 1;
  auto res = plan::search(r);
  auto all = plan::enumerate({{r.shape, m, "bf16"}, 8, {}});
  plan::MemoryInputs in{&l, m, r.shape, 16, predict::engine_step_options("bf16", {})};
  int64_t over = 0;
  for (auto& c : all.candidates) over += plan::memory_per_rank(c, in).total() > r.memory_limit;
  CHECK(res.space.refused.by_reason.at("memory") == over);
  // ddp in one micro-step of 4 rows: refused without recomputation, kept with it.
  bool ddp_plain = false, ddp_recompute = false;
  for (auto& x : res.ranked) {
    CHECK(x.memory.total() <= r.memory_limit);
    if (x.candidate.choice.name() == "ddp" && x.candidate.accum == 1)
      (x.candidate.recompute ? ddp_recompute : ddp_plain) = true;
  }
  CHECK_FALSE(ddp_plain);
  CHECK(ddp_recompute);

  // Below the least any layout needs: refused naming the flag and the least.
  r.memory_limit = 1024;
  CHECK_THROWS_WITH(plan::search(r), Catch::Contains("--memory-limit") &&
                                         Catch::Contains("the least is"));
}

// The baseline's engine decides the model state as in predict (the `# memory
// model:` line). Under --fused bf16 a ddp replica and a pipeline stage alike
// hold bf16 weights and gradients beside fp32 masters and Adam's moments,
// stepped by the fused master-weight AdamW with no fp32 gradient copies:
// (2 x 2 + 12) = 16 bytes a parameter, as unfused (a stage's replicas
// all-reduce their gradients in bf16, 2 bytes a parameter of working set
// against 4). So at a limit of exactly a pipeline layout's unfused need, the
// fused baseline keeps that layout too, and refuses no more layouts for
// memory; were its stages counted at 20 bytes (fp32 gradient copies) it
// would refuse it.
TEST_CASE("pruning follows the baseline's engine: the fused bf16 baseline keeps a pipeline layout at its unfused need") {
  test::PlanSetup setup;
  auto& r = setup.r;
  const auto& m = setup.m;
  const double psi = static_cast<double>(m.parameters());
  auto plain = [](const plan::Result& res, const std::string& name) {
    for (auto& x : res.ranked)
      if (x.candidate.choice.name() == name && x.candidate.accum == 1 && !x.candidate.recompute) return &x;
    return static_cast<const plan::Ranked*>(nullptr);
  };
  auto find = [](const plan::Result& res, const std::string& full) {
    for (auto& x : res.ranked)
      if (x.candidate.name() == full) return &x;
    return static_cast<const plan::Ranked*>(nullptr);
  };

  r.base = test::tiny_baseline(8, 0.5, "bf16");
  r.memory_limit = 1e15;
  const auto roomy = plan::search(r);
  const auto* pipe = plain(roomy, "pipeline");
  REQUIRE(pipe);
  const std::string pipe_name = pipe->candidate.name();
  const double pipe_persistent = pipe->prediction.memory_persistent;
  r.memory_limit = pipe->memory.total();

  auto unfused = plan::search(r);
  const auto* kept = find(unfused, pipe_name);
  REQUIRE(kept);
  CHECK(kept->memory.total() == Approx(r.memory_limit));
  // predict's own figure for the same layout is the one plan pruned by.
  CHECK(kept->prediction.memory_bytes == Approx(kept->memory.state));

  r.base.engine = EnginePolicy::recorded("bf16", true, "fused");
  REQUIRE(r.base.engine.resident());
  auto fused = plan::search(r);
  const auto* kept_fused = find(fused, pipe_name);
  REQUIRE(kept_fused);
  CHECK(kept_fused->memory.total() <= r.memory_limit);
  CHECK(fused.space.refused.by_reason["memory"] <= unfused.space.refused.by_reason["memory"]);
  for (auto& x : fused.ranked) {
    CHECK(x.memory.total() <= r.memory_limit);
    CHECK(x.prediction.memory_bytes == Approx(x.memory.state));
  }
  // ddp's replica, where it fits, holds 16 bytes a parameter under both engines.
  r.memory_limit = 1e15;
  const auto fused_roomy = plan::search(r);
  const auto* ddp = plain(fused_roomy, "ddp");
  REQUIRE(ddp);
  CHECK(ddp->memory.state == Approx(16 * psi));
  // The pipeline layout's stage state: the unfused one's 16 bytes a
  // parameter of its largest stage.
  const auto* pipe_fused = find(fused_roomy, pipe_name);
  REQUIRE(pipe_fused);
  CHECK(pipe_fused->prediction.memory_persistent == Approx(pipe_persistent));
}
