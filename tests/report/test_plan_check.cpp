// `report` on a sweep `plan` wrote: Spearman's correlation against values
// worked by hand, and the verdict on the predicted best against runs whose
// order and noise are set here.
#include "test_catch.h"

#include <cmath>

#include "report/plan_check.h"

using namespace hpcbench;

namespace {

results::PlanFile plan3() {
  results::PlanFile p;
  p.nodes = 1, p.gpus_per_node = 2, p.global_batch = 8;
  p.layouts.push_back({"baseline-1x1", "baseline", false, 0, 0, 400, 390, 420, 20, 0});
  p.layouts.push_back({"a-1x2", "a", false, 1, 1, 100, 100, 110, 80, 0});
  p.layouts.push_back({"b-1x2", "b", false, 2, 1, 110, 110, 120, 72, 0});
  p.layouts.push_back({"c-1x2", "c", false, 3, 2, 200, 200, 220, 40, 0});
  return p;
}

results::RunResult run(const std::string& id, double samples_per_s, double noise) {
  results::RunResult r;
  r.run_id = id;
  r.samples_per_s = samples_per_s;
  r.step_ms_median = 8000 / samples_per_s;
  r.step_ms_mean = r.step_ms_median;
  r.step_ms_stddev = noise * r.step_ms_mean;
  return r;
}

}  // namespace

TEST_CASE("Spearman's rank correlation, by hand") {
  CHECK(report::spearman({1, 2, 3}, {10, 20, 30}) == Approx(1));
  CHECK(report::spearman({1, 2, 3}, {30, 20, 10}) == Approx(-1));
  // d = (1, 1, 0): 1 - 6 x 2 / (3 x 8) = 0.5
  CHECK(report::spearman({1, 2, 3}, {2, 1, 3}) == Approx(0.5));
  // Tied values take their average rank (1.5, 1.5, 3 against 1, 2, 3): 1.5 / sqrt(1.5 x 2).
  CHECK(report::spearman({1, 1, 2}, {1, 2, 3}) == Approx(1.5 / std::sqrt(3.0)));
}

TEST_CASE("the verdict: held, not held beyond the noise, within it") {
  auto p = plan3();
  SECTION("the predicted best measured second: held") {
    auto c = report::check_plan(p, {run("baseline-1x1", 21, 0.01), run("a-1x2", 75, 0.01), run("b-1x2", 78, 0.01),
                                    run("c-1x2", 41, 0.01)});
    CHECK(c.measured == 3);
    CHECK(c.best_in_top2);
    CHECK(c.spearman == Approx(0.5));
    CHECK(c.verdict.starts_with("held"));
    auto text = report::plan_check_text(p, c);
    CHECK(text.find("rank correlation (Spearman) of predicted and measured: 0.50") != std::string::npos);
  }
  SECTION("measured last, 50 % behind, noise 2 %: not held") {
    auto c = report::check_plan(p, {run("a-1x2", 40, 0.01), run("b-1x2", 80, 0.01), run("c-1x2", 60, 0.01)});
    CHECK_FALSE(c.best_in_top2);
    CHECK(c.spearman == Approx(-0.5));
    CHECK(c.verdict.starts_with("NOT held beyond the runs' noise"));
  }
  SECTION("measured last but within noisy runs' spread: said so") {
    auto c = report::check_plan(p, {run("a-1x2", 76, 0.05), run("b-1x2", 80, 0.05), run("c-1x2", 78, 0.05)});
    CHECK_FALSE(c.best_in_top2);
    CHECK(c.verdict.starts_with("not held, but within the runs' noise"));
  }
  SECTION("unfinished jobs are shown as such and too few runs say so") {
    auto c = report::check_plan(p, {run("a-1x2", 76, 0.05)});
    CHECK(c.measured == 1);
    CHECK(c.verdict.find("too few") != std::string::npos);
    CHECK(report::plan_check_text(p, c).find("not finished") != std::string::npos);
  }
}
