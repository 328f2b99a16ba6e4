// The ranking on a system whose answer is known in closed form: collectives
// cost nothing, so a layout's step is its compute plus its optimizer's
// share. At 2 ranks and 8 sequences a step, from a baseline of forward 1 s
// and backward 2 s for 8 rows and an optimizer of 1.5 s:
//   each data-parallel replica computes 4 rows: C = 3 x 4/8 = 1.5 s
//   zero (every stage) and fsdp step the optimizer over half:  C + O/2 = 2.25 s  (the fastest)
//   ddp steps it whole:                                         C + O   = 3.0 s
//   recomputation adds a forward: C_r = (1 + 1 + 2) x 4/8 = 2 s
//   tensor tp 2 computes 8 rows over 2 ranks (C) and steps its shard: C + O x shard / Ψ.
#include "test_catch.h"

#include <algorithm>

#include "core/error.h"
#include "fixture.h"
#include "plan/search.h"
#include "predict/baseline.h"
#include "replay_by_definition.h"

using namespace hpcbench;

namespace {

bool sharded(const plan::Ranked& x) {
  auto n = x.candidate.choice.name();
  return n == "zero" || n == "fsdp";
}

}  // namespace

TEST_CASE("ranking on a free network: the closed form's order") {
  test::PlanSetup s;
  auto res = plan::search(s.r);
  REQUIRE(res.ranked.size() > 10);
  for (size_t k = 1; k < res.ranked.size(); ++k) {
    CHECK(res.ranked[k - 1].prediction.step_s <= res.ranked[k].prediction.step_s);
    CHECK(res.ranked[k].rank == static_cast<int>(k) + 1);
  }
  // The 8 sharded option sets without recomputation (zero 1, 2, 3, 3 without prefetch; fsdp full and
  // grad-op, prefetch on and off), in 1, 2 or 4 micro-steps (accumulation moves no compute), are the
  // fastest, at C + O/2.
  for (size_t k = 0; k < 24; ++k) {
    CHECK(sharded(res.ranked[k]));
    CHECK_FALSE(res.ranked[k].candidate.recompute);
    CHECK(res.ranked[k].prediction.step_s == Approx(2.25));
  }
  // Next: tensor tp 2 (1, 2, 4 or 8 micro-steps) at C + O x shard / Ψ.
  const double shard = s.m.embedding_params() + s.m.head_params() + s.m.layers * s.m.layer_params_per_rank(2);
  for (size_t k = 24; k < 28; ++k) {
    const auto& t = res.ranked[k];
    CHECK(t.candidate.choice.label() == "tensor:tp-size=2");
    CHECK(t.prediction.step_s == Approx(1.5 + 1.5 * shard / static_cast<double>(s.m.parameters())));
  }
  for (auto& x : res.ranked) {
    if (x.candidate.choice.name() == "ddp") CHECK(x.prediction.step_s == Approx(x.candidate.recompute ? 3.5 : 3.0));
    if (sharded(x) && x.candidate.recompute) CHECK(x.prediction.step_s == Approx(2.75));
    // The parts add up to the step; the ideal is the one-device step for 8 rows over 2 ranks.
    const auto& d = x.parts;
    CHECK(d.ideal == Approx(4.5 / 2));
    CHECK(d.ideal + d.compute + d.optimizer + d.data + d.exposed == Approx(x.prediction.step_s));
    CHECK(x.prediction.samples_per_s == Approx(8 / x.prediction.step_s));
  }
}

TEST_CASE("ties: layouts closer than the calibration's spread and twice the baseline's noise share a group") {
  test::PlanSetup s;
  s.r.baseline_noise = 0.01;
  auto res = plan::search(s.r);
  const auto cal = plan::calibration_for("cuda");
  CHECK(res.tie_threshold == Approx((cal.high - cal.low) + 0.02));
  // tensor is 1.5 + 1.5 x 0.533 = 2.30 s, 2.2 % behind 2.25: within 5.6 %, a tie; pipeline and ddp are not.
  for (auto& x : res.ranked) {
    const bool near = x.prediction.step_s <= 2.25 * (1 + res.tie_threshold);
    CHECK((x.tie_group == 1) == near);
  }
  CHECK(res.ranked[24].tie_group == 1);
  // The interval is the calibration's: the measured step from predicted / (1 + high) to / (1 + low).
  const auto& top = res.ranked.front();
  CHECK(top.step.low == Approx(2.25 / (1 + cal.high)));
  CHECK(top.step.high == Approx(2.25 / (1 + cal.low)));
  // On a CPU the calibration spreads 70 points: ddp (3.0 s, 33 % behind) and the recomputing layouts
  // tie with the fastest too.
  s.r.device_kind = "cpu";
  auto cpu = plan::search(s.r);
  CHECK(cpu.tie_threshold > 0.7);
  for (auto& x : cpu.ranked) {
    CHECK((x.tie_group == 1) == (x.prediction.step_s <= 2.25 * (1 + cpu.tie_threshold)));
    if (x.candidate.choice.name() == "ddp") CHECK(x.tie_group == 1);
  }
}

TEST_CASE("a global batch no layout can take is refused naming it") {
  test::PlanSetup s;
  s.r.global_batch = 0;
  CHECK_THROWS_WITH(plan::search(s.r), Catch::Contains("--global-batch 0"));
  // 3 ranks, a model of 2 layers and 2 heads: no pipeline of 3 stages, no tensor group of 3, so
  // every layout has 3 replicas, and 4 sequences do not split among them.
  s.m.layers = 2;
  s.l = test::tiny_layout(s.m, 16);
  s.r.model = s.m;
  s.r.shape = {1, 3};
  s.r.global_batch = 4;
  CHECK_THROWS_WITH(plan::search(s.r), Catch::Contains("--global-batch 4: no layout") &&
                                           Catch::Contains("global batch's split"));
  s.r.global_batch = 6;
  auto res = plan::search(s.r);
  for (auto& x : res.ranked) CHECK(x.candidate.replicas == 3);
}

TEST_CASE("the search ranks as every layout's schedule replayed by its definition does, on a network that costs") {
  // 2 nodes of 2 on a slow network (collectives of the tiny model's ~70 kB take tenths of a
  // second to seconds beside its 3 s step), so exposed communication orders the layouts.
  test::PlanSetup s;
  predict::System sys;
  sys.name = "slow";
  sys.gpus_per_node = 2;
  sys.intra = {"link", 0.001, 100, 1};
  sys.inter = {"nic", 0.0002, 1000, 1};
  predict::AlphaBeta net(sys);
  s.r.comm = &net;
  s.r.shape = {2, 2};
  s.r.global_batch = 16;
  auto res = plan::search(s.r);
  REQUIRE(res.ranked.size() > 20);

  // The ranking again from the enumeration, each layout's step the reference replay's
  // makespan, in the search's order for equal steps (a stable sort).
  auto space = plan::enumerate({{s.r.shape, s.m, s.r.base.precision}, s.r.global_batch, {}});
  predict::StepOptions so;
  so.compute_bytes = so.reduce_bytes = predict::compute_bytes(s.r.base.precision);
  struct Reference {
    std::string name;
    predict::Replay replay;
  };
  std::vector<Reference> reference;
  for (auto& c : space.candidates) {
    so.grad_accum = c.accum;
    try {
      auto tasks = predict::step_schedule(plan::scaled_baseline(s.r.base, c.micro(), c.recompute), s.l, c.choice,
                                          s.r.shape, net, so);
      reference.push_back({c.name(), test::replay_by_definition(tasks)});
    } catch (const UserError&) {
    }
  }
  std::stable_sort(reference.begin(), reference.end(),
                   [](const Reference& a, const Reference& b) { return a.replay.makespan < b.replay.makespan; });
  REQUIRE(reference.size() == res.ranked.size());
  int exposed = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    const auto& x = res.ranked[k];
    INFO(k << ": " << x.candidate.name() << " against " << reference[k].name);
    CHECK(x.candidate.name() == reference[k].name);
    CHECK(x.prediction.step_s == reference[k].replay.makespan);
    CHECK(x.prediction.exposed_s == reference[k].replay.exposed);
    CHECK(x.prediction.exposed_by_op == reference[k].replay.exposed_by_kind);
    exposed += reference[k].replay.exposed_by_kind.size() > 1;
  }
  // The network mattered: many steps waited on more than one kind of collective.
  CHECK(exposed > 10);
}

// The precision's cost in closed form: with the device's peak at 1 TFLOP/s in
// fp32 and 2 in bf16, a bf16 layout's forward and backward take half the
// fp32 one's (the optimizer as measured), fp16 (no rate) is refused by its
// reason. ddp at 2 ranks: fp32 C + O = 1.5 + 1.5 = 3 s; bf16 0.75 + 1.5.
TEST_CASE("precision searched: compute scaled by the peak rates' ratio, a precision without a rate refused") {
  test::PlanSetup s;
  s.r.peak_tflops = {{"fp32", 1}, {"bf16", 2}};
  auto choices = plan::precision_choices(s.r);
  REQUIRE(choices.size() == 4);
  CHECK(choices[0] == std::pair<std::string, std::string>{"fp32", ""});
  auto res = plan::search(s.r);
  CHECK(res.space.refused.by_reason.at("the precision") > 0);
  CHECK(res.space.precisions_refused.size() == 2);  // tf32 and fp16: no rate
  int ddp32 = 0, ddp16 = 0;
  for (auto& x : res.ranked) {
    CHECK((x.candidate.precision == "fp32" || x.candidate.precision == "bf16"));
    if (x.candidate.choice.name() != "ddp" || x.candidate.recompute) continue;
    if (x.candidate.precision == "fp32") {
      ++ddp32;
      CHECK(x.prediction.step_s == Approx(3.0));
    } else {
      ++ddp16;
      CHECK(x.prediction.step_s == Approx(0.75 + 1.5));
      // Its ideal is the one-device step at bf16 over 2 ranks: (1.5 + 1.5) / 2.
      CHECK(x.parts.ideal == Approx(3.0 / 2));
      CHECK(x.parts.ideal + x.parts.compute + x.parts.optimizer + x.parts.data + x.parts.exposed ==
            Approx(x.prediction.step_s));
    }
  }
  CHECK(ddp32 > 0);
  CHECK(ddp32 == ddp16);
  // The fastest layouts are the sharded ones in bf16: C/2 + O/2 = 0.75 + 0.75.
  CHECK(res.ranked.front().candidate.precision == "bf16");
  CHECK(res.ranked.front().prediction.step_s == Approx(1.5));
}

TEST_CASE("a strategy that cannot run the baseline's engine is refused by it, counted") {
  test::PlanSetup s;
  s.r.base = test::tiny_baseline(8, 1.5, "bf16");
  // A graphed, fused baseline: a pipeline of more than one stage is not
  // captured (lib/strategies/pipeline/spec.cpp), so its layouts are refused.
  s.r.base.engine = EnginePolicy::recorded("bf16", true, "graph+fused");
  REQUIRE(s.r.base.engine.graph());
  auto res = plan::search(s.r);
  CHECK(res.space.refused.by_reason.at("the engine") > 0);
  for (auto& x : res.ranked) CHECK(predict::engine_refusal(s.r.base, x.candidate.choice).empty());
}

// --precisions: the fixture's device rates fp32 at 1 and bf16 at 2 TFLOP/s;
// restricted to bf16 only bf16 layouts are enumerated (the fp32 baseline's
// own dropped), a value that is no precision or a list none of whose
// precisions the baseline can reach is refused naming the flag.
TEST_CASE("--precisions restricts the precisions searched; bad values refused naming the flag") {
  test::PlanSetup s;
  s.r.peak_tflops = {{"fp32", 1}, {"bf16", 2}};
  auto all = plan::search(s.r);
  s.r.precisions = {"bf16"};
  auto only = plan::search(s.r);
  REQUIRE_FALSE(only.ranked.empty());
  for (auto& x : only.ranked) CHECK(x.candidate.precision == "bf16");
  size_t bf16 = 0;
  for (auto& x : all.ranked) bf16 += x.candidate.precision == "bf16";
  CHECK(only.ranked.size() == bf16);
  CHECK(only.space.precisions_refused.empty());
  s.r.precisions = {"bf16", "fp8"};
  CHECK_THROWS_WITH(plan::search(s.r), Catch::Contains("--precisions bf16,fp8") && Catch::Contains("'fp8'"));
  s.r.precisions = {"fp16"};  // no rate for fp16
  CHECK_THROWS_WITH(plan::search(s.r), Catch::Contains("--precisions fp16: none of them"));
}
