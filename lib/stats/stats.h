#pragma once
// Summary statistics of repeated timings (hyperfine's set: mean, stddev,
// median, min, max, plus p90, which is what a straggler shows up in), and
// the statistics of repeated runs that the report's intervals and noise
// warnings rest on (benchstat's set: medians, bootstrap intervals, a rank
// test; the verdict test is in welch.h). tests/reference/report_stats.py
// checks every one against numpy/scipy on the same samples.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpcbench::stats {

struct Summary {
  size_t n = 0;
  double mean = 0, stddev = 0, median = 0, p90 = 0, min = 0, max = 0;
};

// Percentiles by linear interpolation between closest ranks (numpy's
// default), so the figures match what users compute from the JSON.
Summary summarize(std::vector<double> values);
double percentile(std::vector<double> sorted_values, double q);
double median(std::vector<double> values);  // 0 for none

// Sample standard deviation over the mean (ddof = 1, as scipy.stats.variation
// with ddof=1); 0 for fewer than two values or a zero mean.
double coefficient_of_variation(const std::vector<double>& values);

// Median absolute deviation from the median, unscaled (scipy's
// median_abs_deviation with scale=1).
double mad(const std::vector<double>& values);
// Indices of the values more than k scaled MADs (MAD x 1.4826, the normal-
// consistent scale) from the median. A zero MAD (half the values or more
// identical) flags nothing: there is no spread to measure distance in.
inline constexpr double kMadNormalScale = 1.482602218505602;  // 1 / Phi^-1(3/4)
std::vector<size_t> mad_outliers(const std::vector<double>& values, double k = 3.0);

// Relative change of the median of the last third of the values against the
// median of the first third (0.1: the last third is 10 % larger); 0 for
// fewer than three values. Step times that drift show thermal throttling or
// neighbours that came or went.
double drift(const std::vector<double>& values);

// A point estimate with a two-sided percentile bootstrap interval. n is the
// smaller sample's size: with 1 there is no interval (lo == hi == point).
struct Interval {
  double point = 0, lo = 0, hi = 0;
  size_t n = 0;
  bool has_interval() const { return n > 1; }
  bool contains(double v) const { return lo <= v && v <= hi; }
};

// Resampling settings. The seed is fixed so that a report is reproducible:
// the same runs give the same intervals every time.
struct Bootstrap {
  int resamples = 10000;
  double level = 0.95;
  uint64_t seed = 0x6870636265ull;  // "hpcbe"
};

// SplitMix64: tiny, fully specified, so that the reference script draws the
// same resamples (index = next() % n).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// Median with a percentile bootstrap interval over the values.
Interval median_interval(const std::vector<double>& values, const Bootstrap& b = {});
// median(num) / median(den), the interval from resampling both groups
// independently (num's indices drawn first, then den's, each resample).
// Values must be positive (throughputs).
Interval ratio_interval(const std::vector<double>& num, const std::vector<double>& den, const Bootstrap& b = {});

// Two-sided Mann-Whitney U test as scipy.stats.mannwhitneyu(x, y) with its
// defaults: u is x's U statistic; the p-value is exact when either sample
// has at most 8 values and there are no ties, otherwise the normal
// approximation with tie and continuity corrections. With 3 against 3 the
// smallest exact p-value is 0.1, so this test cannot reach 5 % at the
// repeats people run; the report's verdicts use Welch's t-test on log
// throughput instead (welch.h, docs/statistics.md), and this one stays for
// that comparison.
struct RankTest {
  double u = 0, p = 1;
  bool exact = false;
};
RankTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace hpcbench::stats
