#pragma once
// Summary statistics of repeated timings (hyperfine's set: mean, stddev,
// median, min, max, plus p90, which is what a straggler shows up in).
#include <cstddef>
#include <vector>

namespace hpcbench::report {

struct Summary {
  size_t n = 0;
  double mean = 0, stddev = 0, median = 0, p90 = 0, min = 0, max = 0;
};

// Percentiles by linear interpolation between closest ranks (numpy's
// default), so the figures match what users compute from the JSON.
Summary summarize(std::vector<double> values);
double percentile(std::vector<double> sorted_values, double q);

}  // namespace hpcbench::report
