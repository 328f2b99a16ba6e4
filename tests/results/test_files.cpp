// Each results file written and read back by its one reader: step records
// (run.json's steps, loss.csv), each rank's timing, utilisation.csv and
// bench-comm's table.
#include "test_catch.h"

#include <fstream>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "results/bench_comm_file.h"
#include "results/run_folder.h"
#include "results/utilisation_csv.h"
#include "test_env.h"

using namespace hpcbench;
using namespace hpcbench::results;

TEST_CASE("step records and rank timing read back from their run folder as written") {
  test::TempDir dir;
  RunFiles run;
  for (int64_t i = 1; i <= 3; ++i) {
    StepRecord s;
    s.step = i;
    s.epoch = i / 3;
    s.loss = 6.0 - 0.5 * static_cast<double>(i);
    s.lr = 1e-4 * static_cast<double>(i);
    s.grad_norm = 0.25;
    s.skipped = i == 2;
    s.times.ms = 10.0 + static_cast<double>(i);
    s.times.phase_ms[size_t(Phase::Backward)] = 4.5;
    s.times.phase_exposed_ms[size_t(Phase::GradSync)] = 0.75;
    s.times.collectives = 3;
    run.steps.push_back(s);
  }
  RankTiming t;
  t.rank = 1;
  t.step_ms = 11.5;
  t.phase_ms[size_t(Phase::Forward)] = 2.5;
  t.comm_exposed_ms = 0.5;
  run.rank_timing = {RankTiming{}, t};
  auto folder = write_run_folder(dir.path, "r", run);

  auto j = nlohmann::json::parse(read_file(folder / "run.json"));
  auto steps = steps_from_json(j["steps"]);
  REQUIRE(steps.size() == 3);
  CHECK(steps[1].skipped);
  CHECK(steps[2].loss == 4.5);
  CHECK(steps[0].times.phase_ms[size_t(Phase::Backward)] == 4.5);
  CHECK(steps[0].times.phase_exposed_ms[size_t(Phase::GradSync)] == 0.75);
  CHECK(steps[0].times.collectives == 3);
  CHECK(j["steps"][0].contains("grad_sync_exposed_ms"));

  auto series = read_step_series(folder / "run.json");
  CHECK(series.step == std::vector<int64_t>{1, 2, 3});
  CHECK(series.ms == std::vector<double>{11, 12, 13});
  CHECK(series.loss == std::vector<double>{5.5, 5, 4.5});

  auto ranks = read_rank_timing(folder / "summary.csv");
  REQUIRE(ranks);
  REQUIRE(ranks->size() == 2);
  CHECK((*ranks)[1].rank == 1);
  CHECK((*ranks)[1].step_ms == 11.5);
  CHECK((*ranks)[1].phase_ms[size_t(Phase::Forward)] == 2.5);
  CHECK((*ranks)[1].comm_exposed_ms == 0.5);
  // A folder without per-rank timing says so.
  auto plain = write_run_folder(dir.path, "plain", RunFiles{});
  CHECK_FALSE(read_rank_timing(plain / "run.json"));
}

TEST_CASE("utilisation.csv: rows read back as written, a cut last line skipped, a missing column named") {
  UtilisationRow g;
  g.host = "n1";
  g.time_s = 1.5;
  g.step = 2;
  g.phase = "timed";
  g.index = 1;
  g.util_percent = 87.5;
  g.memory_bytes = 123456789;
  g.power_w = 250.25;
  g.throttle_reasons = 4;
  g.energy_mj = 1600000;
  g.bus_id = "0000:1B:00.0";
  UtilisationRow c;
  c.host = "n2";
  c.gpu = false;
  c.index = 3;
  c.phase = "setup";
  auto text = utilisation_header() + utilisation_line(g) + utilisation_line(c) + "n2,2.0,3,ti";
  auto rows = parse_utilisation(text);
  REQUIRE(rows.size() == 2);
  CHECK(utilisation_line(rows[0]) == utilisation_line(g));
  CHECK(utilisation_line(rows[1]) == utilisation_line(c));
  CHECK(rows[0].throttle_reasons == 4u);
  CHECK_FALSE(rows[1].util_percent);
  CHECK_THROWS_WITH(parse_utilisation("host,time_s\nn1,0\n"), Catch::Contains("no column 'step'"));
}

TEST_CASE("bench-comm's table reads back as written, with its shape") {
  test::TempDir dir;
  BenchCommRow r{"all_gather", 1 << 20, 1 << 18, "float", "none", -1, 123.45, 8.5, 4.25, 0};
  auto file = dir.path / "comm.txt";
  std::ofstream(file) << "# hpcbench bench-comm\n"
                      << bench_comm_shape_line("gloo", 4, 2, "local") << "\n" << bench_comm_header() << bench_comm_line(r);
  auto f = read_bench_comm_file(file, "--comm");
  CHECK(f.ranks == 4);
  CHECK(f.nodes == 2);
  REQUIRE(f.rows.size() == 1);
  CHECK(bench_comm_line(f.rows[0]) == bench_comm_line(r));
  std::ofstream(file) << bench_comm_header() << bench_comm_line(r);
  CHECK_THROWS_WITH(read_bench_comm_file(file, "--comm"), Catch::Contains("rank(s) on M node(s)"));
  std::ofstream(file) << bench_comm_shape_line("gloo", 2, 1, "local") << "\nall_reduce 8 2 float\n";
  CHECK_THROWS_WITH(read_bench_comm_file(file, "--comm"), Catch::Contains("line 2 is not a bench-comm row"));
  CHECK(bus_factor("all_reduce", 4) == Approx(1.5));
}
