// The engine dimension of `plan` (plan/engine_cost.h): a change of engine
// priced by a ratio of recorded steps, worked here in closed form on the
// fixture's job (2 ranks, 8 sequences, forward 1 s + backward 2 s for 8 rows,
// optimizer 1.5 s, a free network: ddp's eager step is C + O = 1.5 + 1.5 = 3 s,
// and every phase scaled by the ratio under another engine).
#include "test_catch.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "fixture.h"
#include "plan/engine_cost.h"
#include "plan/search.h"
#include "predict/baseline.h"

using namespace hpcbench;

namespace {

const char* kHeader = "device_name,strategy,precision,batch,engine,step_ms,step_ms_stddev,run\n";

// `rows` under the header in a file of its own, read back.
plan::EngineSteps steps_of(const std::string& rows, const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / ("hpcbench-engine-" + name + ".csv");
  std::ofstream(path) << "# a comment line\n" << kHeader << rows;
  return plan::read_engine_steps(path.string());
}

bool is_ddp_eager_step(const plan::Ranked& x) {
  return x.candidate.choice.name() == "ddp" && !x.candidate.recompute && x.candidate.accum == 1;
}

}  // namespace

TEST_CASE("engine ratio: repeats give its band, one run its stddev, batches between recorded ones interpolated") {
  auto t = steps_of(
      "G,ddp,fp32,2,eager,10,0,r1\nG,ddp,fp32,2,graph,4,0,r2\n"
      "G,ddp,fp32,8,eager,10,0,r3\nG,ddp,fp32,8,graph,6,0,r4\n"
      "G,ddp,fp32,32,eager,10,1,r5\nG,ddp,fp32,32,graph,5,0.5,r6\n"
      "G,ddp,fp32,64,eager,4,0,r7\nG,ddp,fp32,64,eager,6,0,r8\nG,ddp,fp32,64,graph,1,0,r9\nG,ddp,fp32,64,graph,2,0,r10\n",
      "ratio");
  plan::EngineKey k{"G", "ddp", "fp32", 8};
  auto at8 = plan::engine_ratio(t, k, "eager", "graph");
  CHECK(at8.missing.empty());
  CHECK(at8.ratio == Approx(0.6));
  // Half-way in log2 between 2 (0.4) and 8 (0.6).
  k.batch = 4;
  CHECK(plan::engine_ratio(t, k, "eager", "graph").ratio == Approx(0.5));
  // The reverse change is priced from the same runs.
  CHECK(plan::engine_ratio(t, k, "graph", "eager").ratio == Approx(0.5 * (10.0 / 4 + 10.0 / 6)));
  // One run each side: its mean +- stddev.
  k.batch = 32;
  auto one = plan::engine_ratio(t, k, "eager", "graph");
  CHECK(one.ratio == Approx(0.5));
  CHECK(one.low == Approx(4.5 / 11));
  CHECK(one.high == Approx(5.5 / 9));
  // Repeats: means 5 and 1.5, band min / max to max / min.
  k.batch = 64;
  auto rep = plan::engine_ratio(t, k, "eager", "graph");
  CHECK(rep.ratio == Approx(1.5 / 5));
  CHECK(rep.low == Approx(1.0 / 6));
  CHECK(rep.high == Approx(2.0 / 4));
  // Outside the recorded batches, another strategy, precision or device: not priced.
  for (auto key : {plan::EngineKey{"G", "ddp", "fp32", 1}, plan::EngineKey{"G", "ddp", "fp32", 128},
                   plan::EngineKey{"G", "zero", "fp32", 8}, plan::EngineKey{"G", "ddp", "bf16", 8},
                   plan::EngineKey{"H", "ddp", "fp32", 8}})
    CHECK_FALSE(plan::engine_ratio(t, key, "eager", "graph").missing.empty());
  CHECK(plan::engine_ratio(t, {"G", "ddp", "fp32", 1}, "eager", "graph").missing ==
        "ddp fp32 graph against eager at batch 1 on G");
  CHECK(plan::engine_ratio(t, {"G", "ddp", "fp32", 8}, "eager", "fused").missing.size() > 0);
  // The same engine needs no record.
  CHECK(plan::engine_ratio(t, {"X", "y", "z", 3}, "graph", "graph").ratio == 1);
}

TEST_CASE("engine ratio file: bad rows refused naming the file and line") {
  CHECK_THROWS_WITH(steps_of("G,ddp,fp32,8,warp,1,0,r\n", "bad-engine"),
                    Catch::Contains("line 3") && Catch::Contains("engine 'warp'"));
  CHECK_THROWS_WITH(steps_of("G,ddp,fp32,8,graph,fast,0,r\n", "bad-number"), Catch::Contains("step_ms 'fast'"));
  CHECK_THROWS_WITH(steps_of("G,ddp,fp32,0,graph,1,0,r\n", "bad-batch"), Catch::Contains("batch '0'"));
  CHECK_THROWS_WITH(steps_of("G,ddp,fp32,8,graph,1\n", "short"), Catch::Contains("6 fields"));
  CHECK_THROWS_WITH(plan::read_engine_steps("/nonexistent/engine.csv"),
                    Catch::Contains("--engine-ratios /nonexistent/engine.csv"));
}

// ddp under a graph recorded at 4 rows only (its micro-batch without
// accumulation), at a quarter of eager's step over two repeats a side:
// ratio (1.0 + 1.2) / (4.0 + 4.4) = 0.2619, so ddp graphed steps
// 3 x 0.2619 = 0.786 s and beats the sharded strategies' eager 2.25 s.
TEST_CASE("engine searched: counts, the recorded ratio's closed form, the unrecorded refused with the reason") {
  test::PlanSetup s;
  s.r.device_name = "G";
  auto steps = steps_of("G,ddp,fp32,4,eager,4.0,0,a\nG,ddp,fp32,4,eager,4.4,0,b\n"
                        "G,ddp,fp32,4,graph,1.0,0,c\nG,ddp,fp32,4,graph,1.2,0,d\n",
                        "search");
  auto without = plan::search(s.r);
  s.r.engine_steps = &steps;
  auto with = plan::search(s.r);
  // Every layout the space lets through is tried on the 3 other engines.
  auto space = plan::enumerate({{s.r.shape, s.r.model, s.r.base.precision}, s.r.global_batch,
                                plan::precision_choices(s.r)});
  const auto n = static_cast<int64_t>(space.candidates.size());
  CHECK(with.space.enumerated == space.enumerated + 3 * n);
  CHECK(with.space.enumerated == static_cast<int64_t>(with.ranked.size()) + with.space.refused.total());
  CHECK(without.space.enumerated == space.enumerated);
  // Priced: ddp under graph at 4 rows a micro-step, the others refused by the reason, each strategy named.
  int64_t ddp_at_4 = 0;
  for (auto& c : space.candidates) ddp_at_4 += c.choice.name() == "ddp" && c.micro() == 4;
  REQUIRE(ddp_at_4 > 0);
  CHECK(static_cast<int64_t>(with.ranked.size()) == static_cast<int64_t>(without.ranked.size()) + ddp_at_4);
  CHECK(with.space.refused.by_reason.at("the engine: no recorded ratio") > 0);
  CHECK(with.unpriced.contains("zero fp32 graph"));
  CHECK(with.unpriced.contains("ddp fp32 fused"));
  // Recorded at 4 rows only: its micro-batches of 2 and 1 (accumulation) are refused, so it is named too.
  CHECK(with.unpriced.contains("ddp fp32 graph"));
  const double ratio = 2.2 / 8.4;
  int graphed = 0;
  for (auto& x : with.ranked) {
    if (x.candidate.engine == "eager") continue;
    ++graphed;
    CHECK(x.candidate.engine == "graph");
    CHECK(x.candidate.choice.name() == "ddp");
    CHECK(x.candidate.micro() == 4);
    CHECK(x.engine.ratio == Approx(ratio));
    if (is_ddp_eager_step(x)) {
      CHECK(x.prediction.step_s == Approx(3.0 * ratio));
      // The calibration's interval widened by the repeats' band: 1.0 / 4.4 to 1.2 / 4.0.
      auto i = plan::measured_step_interval(with.calibration, x.prediction.step_s);
      CHECK(x.step.low == Approx(i.low * (1.0 / 4.4) / ratio));
      CHECK(x.step.high == Approx(i.high * (1.2 / 4.0) / ratio));
      CHECK(x.parts.ideal + x.parts.compute + x.parts.optimizer + x.parts.data + x.parts.exposed ==
            Approx(x.prediction.step_s));
    }
  }
  CHECK(graphed == ddp_at_4);
  REQUIRE_FALSE(with.ranked.empty());
  CHECK(with.ranked.front().candidate.engine == "graph");
  CHECK(with.ranked.front().prediction.step_s == Approx(3.0 * ratio));
  // Under eager everything is as without the file.
  CHECK(without.ranked.front().prediction.step_s == Approx(2.25));
}

TEST_CASE("engine on a CPU baseline: the baseline's alone, never a graph") {
  test::PlanSetup s;
  s.r.device_kind = "cpu";
  s.r.base.device = "cpu";
  s.r.device_name = "G";
  auto steps = steps_of("G,ddp,fp32,4,eager,4.0,0,a\nG,ddp,fp32,4,graph,1.0,0,c\n", "cpu");
  auto without = plan::search(s.r);
  s.r.engine_steps = &steps;
  auto res = plan::search(s.r);
  CHECK(res.space.enumerated == without.space.enumerated);
  CHECK(res.ranked.size() == without.ranked.size());
  CHECK(res.unpriced.empty());
  for (auto& x : res.ranked) CHECK(x.candidate.engine == "eager");
  CHECK(plan::engine_settings(s.r.base.engine, "fp32", "cpu").size() == 1);
  CHECK_FALSE(plan::engine_settings(s.r.base.engine, "fp32", "cpu").front().graph());
}

// Pruned on the searched engine's own state: each layout's memory is
// predict's model_state under that layout's engine, not the baseline's. Since
// a tensor shard's masters step by the fused master-weight AdamW, it holds 16
// bytes a parameter under --fused bf16 as under eager autocast (docs/plan.md),
// so the two states are equal, each checked against predict on its own
// engine; no strategy's state now differs between the engines, so no memory
// limit can keep one engine and refuse the other.
TEST_CASE("engine searched: memory pruned under each engine's own model state") {
  test::PlanSetup s;
  s.r.base = test::tiny_baseline(8, 1.5, "bf16");
  s.r.device_name = "G";
  auto steps = steps_of("G,tensor,bf16,8,eager,4.0,0,a\nG,tensor,bf16,8,fused,3.0,0,b\n", "memory");
  s.r.engine_steps = &steps;
  auto res = plan::search(s.r);
  const plan::Ranked* eager = nullptr;
  const plan::Ranked* fused = nullptr;
  for (auto& x : res.ranked) {
    if (x.candidate.choice.name() != "tensor" || x.candidate.recompute || x.candidate.accum != 1) continue;
    if (x.candidate.engine == "eager") eager = &x;
    if (x.candidate.engine == "fused") fused = &x;
  }
  REQUIRE(eager);
  REQUIRE(fused);
  auto fused_engine = EnginePolicy::recorded("bf16", true, "fused");
  auto want = predict::model_state(fused->candidate.choice, *s.r.layout, s.r.shape,
                                   predict::engine_step_options("bf16", fused_engine));
  CHECK(fused->memory.state == Approx(want.total()));
  auto eager_engine = EnginePolicy::recorded("bf16", false, "eager");
  auto eager_want = predict::model_state(eager->candidate.choice, *s.r.layout, s.r.shape,
                                         predict::engine_step_options("bf16", eager_engine));
  CHECK(eager->memory.state == Approx(eager_want.total()));
  CHECK(fused->memory.state == Approx(eager->memory.state));
  CHECK(fused->prediction.step_s == Approx(eager->prediction.step_s * 0.75));
}
