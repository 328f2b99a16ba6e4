// The layouts plan enumerates, counted by hand from each spec's search space
// (lib/strategies/*/spec.cpp) on small jobs, and what the specs' checks and
// the global batch refuse.
#include "test_catch.h"

#include <set>

#include "core/error.h"
#include "fixture.h"
#include "plan/space.h"

using namespace hpcbench;

namespace {

plan::Space space(strategies::Shape shape, const std::string& precision, int64_t global_batch) {
  return plan::enumerate({{shape, test::tiny_shape(), precision}, global_batch, {}});
}

int64_t count(const plan::Space& s, const std::string& prefix) {
  int64_t n = 0;
  for (auto& c : s.candidates)
    if (c.choice.label().starts_with(prefix)) ++n;
  return n;
}

}  // namespace

TEST_CASE("one node of 2 ranks, fp32, global batch 8: every layout counted") {
  auto s = space({1, 2}, "fp32", 8);
  // Each option set twice (without and with recomputation), and each replica's rows in 1, 2, 4, ...
  // micro-steps while they divide:
  //   baseline 1 set (refused before its rows: it runs on one device)
  //   ddp 3 buckets x 2 overlaps = 6 sets, 2 replicas of 4 rows: accumulation 1, 2, 4
  //   fsdp full/grad-op x prefetch on/off = 4 (no hybrid on one node), the same 3 accumulations
  //   zero stages 1, 2, 3, 3 without prefetch = 4, the same 3
  //   pipeline pp 2 x (gpipe M=1, then 2 schedules x M 2..32) = 11 sets, 1 replica of 8 rows: 1, 2, 4, 8
  //   tensor tp 2 = 1 set, 1 replica of 8 rows: 1, 2, 4, 8
  CHECK(s.enumerated == 2 * (1 + 6 * 3 + 4 * 3 + 4 * 3 + 11 * 4 + 1 * 4));
  CHECK(s.refused.by_reason.at("the job's shape") == 2);
  // A pipeline's M micro-batches need M <= rows a micro-step: of 11 sets, 7 fit 8 rows (M 1, 2, 4, 8),
  // 5 fit 4, 3 fit 2, 1 fits 1: 16 of 44, twice.
  CHECK(s.refused.by_reason.at("the micro-batches") == 2 * (44 - 16));
  CHECK(s.refused.total() == 2 + 56);
  CHECK(static_cast<int64_t>(s.candidates.size()) == s.enumerated - 58);
  CHECK(count(s, "ddp") == 2 * 6 * 3);
  CHECK(count(s, "fsdp") == 2 * 4 * 3);
  CHECK(count(s, "zero") == 2 * 4 * 3);
  CHECK(count(s, "pipeline") == 2 * 16);
  CHECK(count(s, "tensor") == 2 * 4);
  for (auto& c : s.candidates) CHECK(c.micro() * c.accum * c.replicas == 8);
  REQUIRE(s.not_searched.size() == 1);
  CHECK(s.not_searched[0].starts_with("dp "));
  // Each candidate once.
  std::set<std::string> names;
  for (auto& c : s.candidates) names.insert(c.name());
  CHECK(names.size() == s.candidates.size());
}

TEST_CASE("two nodes of 2, bf16: hybrid sharding, fp32 reduction, and the model's and batch's refusals") {
  auto s = space({2, 2}, "bf16", 8);
  // fsdp: full/grad-op/hybrid x prefetch x reduce (compute dtype, fp32) = 12 sets; 4 replicas of 2 rows:
  // accumulation 1 and 2.
  CHECK(count(s, "fsdp") == 2 * 12 * 2);
  int hybrid = 0;
  for (auto& c : s.candidates) hybrid += c.choice.label().find("hybrid") != std::string::npos;
  CHECK(hybrid == 2 * 4 * 2);
  // zero: 4 sets x 2 reductions.
  CHECK(count(s, "zero") == 2 * 8 * 2);
  // tensor: tp 2 and 4; tp 4 is refused (its 2 heads do not divide among 4, or its group would cross
  // nodes), as is the baseline (one device): 2 x 2.
  // tp 2 has 2 replicas of 4 rows: accumulation 1, 2, 4.
  CHECK(count(s, "tensor") == 2 * 3);
  CHECK(s.refused.by_reason["the model"] + s.refused.by_reason["the job's shape"] == 4);
  // pipeline: pp 2 (2 replicas of 4 rows: micro-batches of 4, 2, 1 take 5 + 3 + 1 of the 11 sets) and
  // pp 4 (1 replica of 8 rows: 7 + 5 + 3 + 1).
  CHECK(count(s, "pipeline") == 2 * 9 + 2 * 16);
  CHECK(s.refused.by_reason.at("the micro-batches") == 2 * (33 - 9) + 2 * (44 - 16));
}

TEST_CASE("a global batch the replicas cannot split is refused by reason") {
  // 6 rows over 4 replicas (ddp, fsdp, zero) or 2 (tensor 2, pipeline 2): only the 1-replica layouts remain.
  auto s = space({2, 2}, "fp32", 6);
  CHECK(s.refused.by_reason.at("the global batch") > 0);
  for (auto& c : s.candidates) CHECK(6 % c.replicas == 0);
  for (auto& c : s.candidates) CHECK(c.rows * c.replicas == 6);
  for (auto& c : s.candidates) CHECK(c.micro() * c.accum == c.rows);
  CHECK_THROWS_WITH(space({1, 2}, "fp32", 0), Catch::Contains("--global-batch 0"));
}

TEST_CASE("precisions: bf16 searched beside fp32, fp16 refused by its reason, every layout counted") {
  auto s = plan::enumerate({{{1, 2}, test::tiny_shape(), "fp32"},
                            8,
                            {{"fp32", ""}, {"bf16", ""}, {"fp16", "no peak rate"}}});
  // fp32 as in the first case: 2 x 91 layouts, 58 refused.
  // bf16: fsdp and zero each offer their reduction in bf16 or fp32 (8 sets each, 3 accumulations);
  //   the rest as in fp32: 2 x (1 + 6·3 + 8·3 + 8·3 + 11·4 + 1·4) = 230, 2 + 56 refused.
  // fp16: refused before its rows, each option set twice: 2 x (1 + 6 + 8 + 8 + 11 + 1) = 70.
  CHECK(s.enumerated == 182 + 230 + 70);
  CHECK(s.refused.by_reason.at("the precision") == 70);
  CHECK(s.refused.by_reason.at("the job's shape") == 2 + 2);
  CHECK(s.refused.by_reason.at("the micro-batches") == 56 + 56);
  int64_t fp32 = 0, bf16 = 0;
  for (auto& c : s.candidates) (c.precision == "fp32" ? fp32 : bf16) += 1;
  CHECK(fp32 == 182 - 58);
  CHECK(bf16 == 230 - 58);
  for (auto& c : s.candidates) CHECK(c.precision != "fp16");
  REQUIRE(s.precisions_refused.size() == 1);
  CHECK(s.precisions_refused[0] == "fp16: no peak rate");
  // A layout at two precisions is two candidates.
  std::set<std::string> names;
  for (auto& c : s.candidates) names.insert(c.name());
  CHECK(names.size() == s.candidates.size());
}
