// The efficiency decomposition's arithmetic (report/efficiency.h) on
// hand-made figures: what each part takes, that they add up, and how a file
// without per-rank timing is shown.
#include "test_catch.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "report/efficiency.h"
#include "results/run_folder.h"
#include "report_fixtures.h"
#include "test_env.h"

using namespace hpcbench;
using report::Part;
namespace fs = std::filesystem;

namespace {

double sum(const report::Decomposition& d) {
  double s = 0;
  for (double v : d.ms) s += v;
  return s;
}

report::RunTiming timing(double job, std::vector<report::RankTime> ranks) {
  report::RunTiming t;
  t.job_step_ms = job;
  t.ranks = std::move(ranks);
  return t;
}

}  // namespace

TEST_CASE("each part takes its own cause and the parts add up to the lost time") {
  // Baseline: 40 ms a step = data 2 + compute 30 + optimizer 8.
  auto base = timing(40, {{40, 2, 30, 8, 0}});
  SECTION("two equal ranks: compute inflation, optimizer not divided, exposed communication") {
    // Each rank: data 1, compute 17 (15 ideal), optimizer 8 (4 ideal), exposed 3: step 29.
    auto run = timing(29, {{29, 1, 17, 8, 3}, {29, 1, 17, 8, 3}});
    auto d = report::decompose(29, 20, run, base, 2);
    CHECK(d.ms[size_t(Part::Compute)] == Approx(2));
    CHECK(d.ms[size_t(Part::Optimizer)] == Approx(4));
    CHECK(d.ms[size_t(Part::Exposed)] == Approx(3));
    CHECK(d.ms[size_t(Part::Data)] == Approx(0));
    CHECK(d.ms[size_t(Part::Waiting)] == Approx(0));
    CHECK(d.ms[size_t(Part::Unexplained)] == Approx(0).margin(1e-9));
    CHECK(sum(d) == Approx(9));
    CHECK(d.efficiency() == Approx(20.0 / 29));
    double points = 0;
    for (size_t p = 0; p < report::kParts; ++p) points += d.points(Part(p));
    CHECK(points == Approx(100 - 100 * d.efficiency()));
    CHECK(report::parts_by_size(d).front() == Part::Optimizer);
  }
  SECTION("a slow rank: the other rank's wait for it is waiting, not communication") {
    // Rank 1 computes 10 ms longer; rank 0 waits those 10 ms inside its
    // collective on top of the collective's own 3 ms.
    auto run = timing(39, {{39, 1, 17, 8, 13}, {39, 1, 27, 8, 3}});
    auto d = report::decompose(39, 20, run, base, 2);
    CHECK(d.reference_rank == 0);
    CHECK(d.ms[size_t(Part::Waiting)] == Approx(10));
    CHECK(d.ms[size_t(Part::Exposed)] == Approx(3));
    CHECK(d.ms[size_t(Part::Compute)] == Approx(2));
    CHECK(sum(d) == Approx(19));
    CHECK(report::parts_by_size(d).front() == Part::Waiting);
  }
  SECTION("the job's step beyond the ranks' own (step ends spread) is waiting too") {
    auto run = timing(31, {{29, 1, 17, 8, 3}, {29, 1, 17, 8, 3}});
    auto d = report::decompose(31, 20, run, base, 2);
    CHECK(d.ms[size_t(Part::Waiting)] == Approx(2));
    CHECK(d.ms[size_t(Part::Unexplained)] == Approx(0).margin(1e-9));
  }
  SECTION("a measured step the run's timing does not reach is unexplained, shown") {
    auto run = timing(29, {{29, 1, 17, 8, 3}, {29, 1, 17, 8, 3}});
    auto d = report::decompose(30, 20, run, base, 2);
    CHECK(d.ms[size_t(Part::Unexplained)] == Approx(1));
    CHECK(sum(d) == Approx(10));
    CHECK_THAT(report::causes_cell(d), Catch::Matchers::Contains("unexplained"));
  }
}

TEST_CASE("run.json's rank timing is read, and an older file falls back on the medians") {
  test::TempDir dir;
  auto r = test::make_run("ddp-2", "ddp", 2, 16, 400, 100);
  r.step_ms_mean = 38;
  r.data_ms = 1, r.forward_ms = 10, r.backward_ms = 20, r.optimizer_ms = 5, r.comm_exposed_ms = 4;
  nlohmann::json rank = {{"rank", 0},          {"step_ms", 39},          {"data_ms", 1},
                         {"data_exposed_ms", 0}, {"forward_ms", 10},     {"forward_exposed_ms", 0},
                         {"backward_ms", 21},  {"backward_exposed_ms", 1}, {"grad_sync_ms", 3},
                         {"grad_sync_exposed_ms", 3}, {"optimizer_ms", 4}, {"optimizer_exposed_ms", 0},
                         {"comm_ms", 6},       {"comm_exposed_ms", 4}};
  fs::path with = dir.path / "with" / "run.json";
  fs::create_directories(with.parent_path());
  std::ofstream(with) << nlohmann::json{{"result", results::to_json(r)}, {"rank_timing_ms", {rank}}}.dump();
  auto t = report::read_run_timing(r, with);
  REQUIRE(t.exact);
  REQUIRE(t.ranks.size() == 1);
  CHECK(t.job_step_ms == 38);
  CHECK(t.ranks[0].data == Approx(1));
  CHECK(t.ranks[0].compute == Approx(30));  // 10 + 21 - 1 exposed in backward
  CHECK(t.ranks[0].other == Approx(4));     // grad_sync all exposed, optimizer 4
  CHECK(t.ranks[0].exposed == Approx(4));
  CHECK(t.ranks[0].step == Approx(39));
  // A summary.csv beside it leads to the same run.json.
  CHECK(report::read_run_timing(r, with.parent_path() / "summary.csv").exact);

  fs::path without = dir.path / "without" / "run.json";
  fs::create_directories(without.parent_path());
  std::ofstream(without) << nlohmann::json{{"result", results::to_json(r)}}.dump();
  auto old = report::read_run_timing(r, without);
  CHECK_FALSE(old.exact);
  REQUIRE(old.ranks.size() == 1);
  CHECK(old.ranks[0].compute == Approx(30));
  CHECK(old.ranks[0].exposed == Approx(4));
  auto d = report::decompose(38, 20, old, timing(40, {{40, 2, 30, 8, 0}}), 2);
  CHECK_FALSE(d.exact);
  // Medians, with the exposed time counted inside the phases and again as
  // exposed: 0 + 15 + 1 + 4 = 20 against 18 ms lost; the -2 is shown.
  CHECK(d.ms[size_t(Part::Unexplained)] == Approx(-2));
  CHECK(sum(d) == Approx(18));
}

// Issue 44, class 7: activation checkpointing's recomputation is its own
// cause. The backward of a run that recomputes runs every layer's forward
// again; that time went to "compute inflation", whose advice (more samples
// per device, cores shared between ranks) does not address it.
TEST_CASE("recomputation is its own part where the run recomputes and its baseline does not") {
  // Baseline: forward 10, backward 20 (compute 30), one device.
  report::RankTime b{40, 2, 30, 8, 0, 10};
  // The same work on one device with activation checkpointing: the backward
  // is 20 + the forward's 10 again.
  report::RankTime r{50, 2, 40, 8, 0, 10};
  auto base = timing(40, {b});
  auto run = timing(50, {r});
  run.recomputes = true;
  auto d = report::decompose(50, 40, run, base, 1);
  CHECK(d.ms[size_t(Part::Recompute)] == Approx(10));
  CHECK(d.ms[size_t(Part::Compute)] == Approx(0).margin(1e-9));
  CHECK(d.ms[size_t(Part::Unexplained)] == Approx(0).margin(1e-9));
  CHECK(sum(d) == Approx(10));
  CHECK(report::largest_cause(d) == Part::Recompute);
  CHECK(std::string(report::part_name(Part::Recompute)) == "recomputation");
  CHECK_THAT(report::causes_cell(d), Catch::StartsWith("recomputation 20.0 pts"));
  // Both recompute (the baseline with --activation-checkpointing too): no
  // recomputation against it.
  base.recomputes = true;
  d = report::decompose(50, 40, run, base, 1);
  CHECK(d.ms[size_t(Part::Recompute)] == 0);
  CHECK(d.ms[size_t(Part::Compute)] == Approx(10));
}
