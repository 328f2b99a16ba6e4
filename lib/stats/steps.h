#pragma once
// A run's step times as one robust figure: the median step, with the
// minimum (what the step costs undisturbed) and the interquartile range
// (its spread, which one spike does not move) beside it, and the steps that
// stand out, named, so that a spike is reported rather than averaged in.
#include <cstddef>
#include <string>
#include <vector>

namespace hpcbench::stats {

// A step is an outlier when it is more than kStepOutlierMads scaled MADs
// from the median and at least kStepOutlierShare of the median away from
// it: the MAD alone flags a 2 % wobble on a GPU whose steps agree to 0.5 %.
inline constexpr double kStepOutlierMads = 3.0;
inline constexpr double kStepOutlierShare = 0.2;

struct StepFigures {
  size_t n = 0;
  double median = 0, min = 0, q1 = 0, q3 = 0;
  double iqr() const { return q3 - q1; }
  std::vector<size_t> outliers;  // indices into the steps given, in order
};

StepFigures step_figures(const std::vector<double>& step_ms);

// "step 12 (3.05x the median), step 27 (0.41x)": the outliers by number
// (first_step is the number of the first value given), "" for none.
std::string outlier_text(const std::vector<double>& step_ms, const StepFigures& f, long first_step);

}  // namespace hpcbench::stats
