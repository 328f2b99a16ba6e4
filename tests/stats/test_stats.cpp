#include "test_catch.h"
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "stats/stats.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("summary statistics equal numpy's (linear percentiles, ddof=1)") {
  auto cases = nlohmann::json::parse(read_file(test::reference_dir() / "report_stats.json"));
  REQUIRE(cases.size() == 5);
  for (auto& c : cases) {
    auto s = stats::summarize(c["values"].get<std::vector<double>>());
    INFO("n = " << s.n);
    // Both sides compute in double; differences come from summation order only.
    CHECK(s.mean == Approx(c["mean"].get<double>()).epsilon(1e-12));
    CHECK(s.stddev == Approx(c["stddev"].get<double>()).epsilon(1e-12).margin(1e-12));
    CHECK(s.median == Approx(c["median"].get<double>()).epsilon(1e-12));
    CHECK(s.p90 == Approx(c["p90"].get<double>()).epsilon(1e-12));
    CHECK(s.min == c["min"].get<double>());
    CHECK(s.max == c["max"].get<double>());
  }
}

TEST_CASE("an empty sample summarises to zeros") {
  auto s = stats::summarize({});
  CHECK(s.n == 0);
  CHECK(s.median == 0);
}
