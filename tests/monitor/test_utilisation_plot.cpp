// utilisation.csv drawn over time (lib/report/plot.h): series per device,
// the step boundaries where each step's first sample is, gnuplot's files.
#include "test_catch.h"

#include "core/atomic_file.h"
#include "core/process.h"
#include "monitor/sampler.h"
#include "results/utilisation_csv.h"
#include "report/plot.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("the utilisation plot's data: one block per device, the steps' first samples as boundaries") {
  std::vector<monitor::Sample> s;
  auto add = [&](double t, int64_t step, int index, double util, std::optional<double> power) {
    monitor::Sample x;
    x.time_s = t, x.step = step, x.index = index, x.util_percent = util, x.power_w = power;
    s.push_back(x);
  };
  add(0.0, 0, 0, 5, 60);
  add(0.0, 0, 1, 6, std::nullopt);
  add(0.1, 1, 0, 50, 200);
  add(0.1, 1, 1, 55, 210);
  add(0.2, 1, 0, 60, 250);
  add(0.3, 2, 0, 90, 300);
  add(0.4, monitor::kEvaluation, 0, 70, 280);
  auto csv = results::utilisation_header() + monitor::csv_rows(s, "n1", 1);
  auto d = report::utilisation_plot_data(csv);
  REQUIRE(d.series == std::vector<std::string>{"GPU 0 (n1)", "GPU 1 (n1)"});
  CHECK(d.step_starts == std::vector<double>{0.1, 0.3});
  CHECK(d.timed_start == 0.3);
  CHECK(d.eval_start == 0.4);
  CHECK(d.has_power);
  CHECK_FALSE(d.cpu);
  CHECK(d.data ==
        "0.000 5 60\n0.100 50 200\n0.200 60 250\n0.300 90 300\n0.400 70 280\n\n\n"
        "0.000 6 NaN\n0.100 55 210\n\n\n");
  auto script = report::utilisation_plot_script(d, "u", "a run");
  CHECK(script.find("'u.dat' index 1 using 1:3") != std::string::npos);
  CHECK(script.find("set arrow from 0.3,graph 0 to 0.3,graph 1 nohead lc rgb '#2ca02c'") != std::string::npos);

  if (hpcbench::find_program("gnuplot").empty()) {
    WARN("gnuplot not installed: the images are not checked");
    return;
  }
  test::TempDir dir;
  write_file_atomic(dir.path / "utilisation.csv", csv);
  auto out = report::write_utilisation_plot(dir.path / "utilisation.csv", dir.path, "utilisation-r1", "r1");
  INFO((out.warnings.empty() ? "" : out.warnings[0]));
  CHECK(out.warnings.empty());
  CHECK(out.images == std::vector<std::string>{"utilisation-r1.svg"});
  CHECK(std::filesystem::file_size(dir.path / "utilisation-r1.png") > 1000);
}
