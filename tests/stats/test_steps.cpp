// A run's step figures (median, minimum, IQR, outlier steps) against numpy's
// percentiles and scipy's MAD on the same series
// (tests/reference/report_stats.py).
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include "read_whole_file.h"
#include "stats/steps.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("step figures equal numpy/scipy: median, min, IQR and the outlier steps") {
  const auto ref = nlohmann::json::parse(read_file(test::reference_dir() / "report_steps.json"));
  REQUIRE(ref.size() == 5);
  for (auto& c : ref) {
    auto v = c["steps"].get<std::vector<double>>();
    INFO(v.size() << " steps, median " << c["median"].get<double>());
    auto f = stats::step_figures(v);
    CHECK(f.n == v.size());
    CHECK(f.median == Approx(c["median"].get<double>()).epsilon(1e-12));
    CHECK(f.min == c["min"].get<double>());
    CHECK(f.iqr() == Approx(c["iqr"].get<double>()).epsilon(1e-10).margin(1e-12));
    CHECK(f.outliers == c["outliers"].get<std::vector<size_t>>());
  }
}

TEST_CASE("outlier steps are named by their step number and their multiple of the median") {
  std::vector<double> v(20, 10.0);
  for (size_t i = 0; i < v.size(); ++i) v[i] += 0.01 * static_cast<double>(i % 5);
  v[3] = 30.0;
  auto f = stats::step_figures(v);
  REQUIRE(f.outliers == std::vector<size_t>{3});
  // The 4th timed step of a run whose first timed step is step 6.
  CHECK(stats::outlier_text(v, f, 6) == "step 9 (2.99x the median)");
}
