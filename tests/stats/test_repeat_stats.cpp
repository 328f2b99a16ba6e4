#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <cmath>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "stats/stats.h"
#include "test_env.h"

using namespace hpcbench;

namespace {

const nlohmann::json& reference() {
  static const auto j = nlohmann::json::parse(read_file(test::reference_dir() / "report_repeat_stats.json"));
  return j;
}

std::vector<double> sample(const std::string& name) {
  return reference()["samples"][name].get<std::vector<double>>();
}

void check_interval(const stats::Interval& iv, const nlohmann::json& expected, size_t n) {
  CHECK(iv.point == Approx(expected[0].get<double>()).epsilon(1e-12));
  CHECK(iv.lo == Approx(expected[1].get<double>()).epsilon(1e-12));
  CHECK(iv.hi == Approx(expected[2].get<double>()).epsilon(1e-12));
  CHECK(iv.n == n);
  CHECK(iv.contains(iv.point));
}

}  // namespace

TEST_CASE("repeat statistics equal numpy/scipy on the same samples") {
  const auto& ref = reference();
  REQUIRE(ref["resamples"].get<int>() == stats::Bootstrap{}.resamples);
  REQUIRE(ref["seed"].get<uint64_t>() == stats::Bootstrap{}.seed);
  REQUIRE(ref["single"].size() == 9);
  for (auto& c : ref["single"]) {
    auto v = c["values"].get<std::vector<double>>();
    INFO(c["name"].get<std::string>());
    CHECK(stats::median(v) == Approx(c["median"].get<double>()).epsilon(1e-12));
    CHECK(stats::mad(v) == Approx(c["mad"].get<double>()).epsilon(1e-12).margin(1e-12));
    CHECK(stats::coefficient_of_variation(v) == Approx(c["cv"].get<double>()).epsilon(1e-10).margin(1e-12));
    CHECK(stats::mad_outliers(v) == c["outliers"].get<std::vector<size_t>>());
    CHECK(stats::drift(v) == Approx(c["drift"].get<double>()).epsilon(1e-12).margin(1e-12));
    auto iv = stats::median_interval(v);
    check_interval(iv, c["median_interval"], v.size());
    // scipy.stats.bootstrap draws its own resamples: same interval up to
    // resampling error (a twentieth of the sample's range).
    if (!c["scipy_interval"].is_null()) {
      auto s = c["scipy_interval"].get<std::vector<double>>();
      double tol = (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / 20;
      CHECK(std::fabs(iv.lo - s[0]) <= tol);
      CHECK(std::fabs(iv.hi - s[1]) <= tol);
    }
  }
}

TEST_CASE("ratio intervals and the rank test equal numpy/scipy on the same samples") {
  const auto& ref = reference();
  REQUIRE(ref["pairs"].size() == 13);
  for (auto& p : ref["pairs"]) {
    auto a = sample(p["num"]), b = sample(p["den"]);
    INFO(p["num"].get<std::string>() << " / " << p["den"].get<std::string>());
    check_interval(stats::ratio_interval(a, b), p["ratio_interval"], std::min(a.size(), b.size()));
    auto t = stats::mann_whitney_u(a, b);
    CHECK(t.u == Approx(p["mwu"]["u"].get<double>()).margin(1e-12));
    CHECK(t.p == Approx(p["mwu"]["p"].get<double>()).epsilon(1e-9).margin(1e-12));
  }
}

TEST_CASE("edge cases: one repeat, identical samples, a zero-variance group") {
  SECTION("one repeat: no interval, no spread, no outlier") {
    auto iv = stats::median_interval({7.5});
    CHECK_FALSE(iv.has_interval());
    CHECK(iv.lo == 7.5);
    CHECK(iv.hi == 7.5);
    CHECK(stats::coefficient_of_variation({7.5}) == 0);
    CHECK(stats::mad_outliers({7.5}).empty());
    CHECK_FALSE(stats::ratio_interval({2.0}, {1.0, 1.1, 0.9}).has_interval());
  }
  SECTION("identical samples: a point interval, and the rank test finds nothing") {
    auto iv = stats::median_interval({3.0, 3.0, 3.0, 3.0});
    CHECK(iv.has_interval());
    CHECK(iv.lo == 3.0);
    CHECK(iv.hi == 3.0);
    auto t = stats::mann_whitney_u({3.0, 3.0, 3.0}, {3.0, 3.0, 3.0});
    CHECK(t.p == 1.0);
    CHECK(stats::ratio_interval({3.0, 3.0}, {3.0, 3.0}).contains(1.0));
  }
  SECTION("a zero-MAD group flags no outlier (there is no spread to measure in)") {
    CHECK(stats::mad_outliers({5.0, 5.0, 5.0, 9.0}).empty());
  }
  SECTION("the seed fixes the interval: the same samples give the same bounds") {
    std::vector<double> v{10, 12, 11, 15, 9};
    auto a = stats::median_interval(v), b = stats::median_interval(v);
    CHECK(a.lo == b.lo);
    CHECK(a.hi == b.hi);
  }
}
