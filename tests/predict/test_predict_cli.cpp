// `hpcbench predict` and `hpcbench report --system` end to end, on run
// folders written by the report library (bert-tiny, so the layout is quick).
#include <fmt/format.h>

#include <sstream>

#include "test_catch.h"
#include "test_env.h"

#include "report/csv_reader.h"
#include "report/run_folder.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

report::RunResult run(const std::string& id, const std::string& strategy, int world, double step_ms) {
  report::RunResult r;
  r.run_id = id;
  r.strategy = strategy;
  r.strategy_options = strategy == "ddp" ? "bucket_mb=25,overlap=on,buckets=2" : "";
  r.world_size = world;
  r.gpus_per_node = world;
  r.device = "cpu";
  r.precision = "fp32";
  r.model = "bert-tiny";
  r.seq_length = 128;
  r.batch_per_device = 8;
  r.global_batch = 8 * world;
  r.data = "synthetic:512:seed0";
  r.step_ms_median = step_ms;
  r.forward_ms = 30;
  r.backward_ms = 60;
  r.optimizer_ms = 10;
  r.samples_per_s = 8.0 * world / (step_ms / 1000);
  r.timed_steps = 10;
  return r;
}

}  // namespace

TEST_CASE("predict: a run folder and a system file give bounded predictions for each strategy") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  report::write_run_folder(runs, "base-1x", run("base-1x", "baseline", 1, 100), {});
  auto out = dir.path / "pred.csv";
  auto sys = test::source_dir() / "configs/systems/a100-pcie-2x.toml";
  auto c = test::run_command(fmt::format("'{}' predict --baseline '{}' --system '{}' --strategies ddp,zero-2,zero-3,fsdp "
                                         "--gpus-per-node 2 --csv '{}'",
                                         test::hpcbench_bin().string(), (runs / "base-1x").string(), sys.string(),
                                         out.string()));
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  CHECK(c.output.find("exposed ms by collective") != std::string::npos);
  auto rows = report::parse_csv(test::slurp(out));
  REQUIRE(rows.size() == 5);  // header + 4 strategies
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin());
  };
  for (size_t i = 1; i < rows.size(); ++i) {
    double speedup = std::stod(rows[i][col("speedup")]), step = std::stod(rows[i][col("step_ms")]);
    CHECK(speedup > 1.0);
    if (rows[i][0] == "ddp") {
      // Compute as measured, the optimizer replicated: never better than perfect.
      CHECK(speedup <= 2.0 + 1e-9);
      CHECK(step >= 100 - 1e-6);
    } else {
      // zero/fsdp step half the optimizer's elements: at least forward +
      // backward + half the optimizer.
      CHECK(step >= 95 - 1e-6);
    }
  }
}

TEST_CASE("predict: flags are checked and named") {
  test::TempDir dir;
  report::write_run_folder(dir.path / "runs", "base-1x", run("base-1x", "baseline", 1, 100), {});
  auto base = (dir.path / "runs/base-1x").string();
  auto bin = test::hpcbench_bin().string();
  auto both = test::run_command(fmt::format("'{}' predict --baseline '{}' --system a.toml --comm b.txt", bin, base));
  CHECK(both.exit_code != 0);
  CHECK(both.output.find("--system") != std::string::npos);
  auto bad = test::run_command(fmt::format("'{}' predict --baseline '{}' --system '{}' --strategies zero-9", bin, base,
                                           (test::source_dir() / "configs/systems/dgx-a100.toml").string()));
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("zero-9") != std::string::npos);
  auto two = test::run_command(fmt::format("'{}' predict --baseline '{}' --system x.toml", bin,
                                           (dir.path / "nowhere").string()));
  CHECK(two.exit_code != 0);
  CHECK(two.output.find("nowhere") != std::string::npos);
}

TEST_CASE("report --system: each run beside its prediction, with the error") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  report::write_run_folder(runs, "base-1x", run("base-1x", "baseline", 1, 100), {});
  report::write_run_folder(runs, "ddp-2x", run("ddp-2x", "ddp", 2, 120), {});
  auto c = test::run_command(fmt::format("'{}' report '{}' --system '{}'", test::hpcbench_bin().string(),
                                         runs.string(),
                                         (test::source_dir() / "configs/systems/a100-pcie-2x.toml").string()));
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  auto at = c.output.find("predicted beside measured");
  REQUIRE(at != std::string::npos);
  auto table = c.output.substr(at);
  auto line_at = table.find("ddp-2x");
  REQUIRE(line_at != std::string::npos);
  std::istringstream line(table.substr(line_at, table.find('\n', line_at) - line_at));
  std::string id, strategy, error;
  int devices = 0;
  double meas = 0, pred = 0;
  line >> id >> strategy >> devices >> meas >> pred >> error;
  CHECK(strategy == "ddp");
  CHECK(devices == 2);
  CHECK(meas == 120);
  // The error column is the prediction against the measurement.
  CHECK(std::stod(error) == Catch::Detail::Approx(100 * (pred / meas - 1)).margin(0.06));
}
