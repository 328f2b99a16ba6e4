#pragma once
// The test that decides whether two rows' throughputs differ: Welch's
// t-test on log throughput, as hyperfine's comparison script does on times.
// Logs because throughput is a rate whose noise scales with it (a neighbour
// takes a share, not a fixed amount) and because a difference of mean logs
// is the log of a ratio, the figure the report shows. Welch rather than
// Student because two strategies need not be equally noisy (a collective on
// a shared node adds its own spread). Its interval is the same test
// inverted, so the interval excludes 1 exactly when p < 1 - level: a line
// cannot show one and contradict the other. docs/statistics.md has the
// simulation behind the choice (false-positive rate and power at 3, 5 and
// 10 repeats); tests/reference/report_stats.py checks it against
// scipy.stats.ttest_ind(log x, log y, equal_var=False).
#include <cstddef>
#include <string>
#include <vector>

#include "stats/stats.h"

namespace hpcbench::stats {

// Student's t distribution: P(|T| >= |t|) with df degrees of freedom
// (df > 0, not necessarily whole: Welch's are not), and the t for which
// P(T <= t) = q.
double student_t_two_sided_p(double t, double df);
double student_t_quantile(double q, double df);

struct WelchTest {
  // Whether the test could be run: two positive values a side and some
  // spread in at least one of them. When false, p is 1 and `why` says why.
  bool defined = false;
  std::string why;
  double t = 0, df = 0, p = 1;
  // exp(mean log x - mean log y), the ratio of geometric means, with the
  // test's two-sided `level` interval; n is the smaller side's size.
  Interval ratio;
};

// Two-sided Welch test of log(x) against log(y); every value must be > 0
// (throughputs). A side without spread has df from the other (scipy's).
// level 0: no interval (ratio.lo == ratio.hi == ratio.point), for the
// simulation, which needs only p.
WelchTest welch_log_test(const std::vector<double>& x, const std::vector<double>& y, double level = 0.95);

// The smallest runs a side at which this test can decide anything: one
// value has no variance.
inline constexpr size_t kWelchMinRuns = 2;

}  // namespace hpcbench::stats
