#include "stats/steps.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "stats/stats.h"

namespace hpcbench::stats {

StepFigures step_figures(const std::vector<double>& v) {
  StepFigures f;
  f.n = v.size();
  if (v.empty()) return f;
  f.median = median(v);
  f.min = *std::min_element(v.begin(), v.end());
  f.q1 = percentile(v, 0.25);
  f.q3 = percentile(v, 0.75);
  for (size_t i : mad_outliers(v, kStepOutlierMads))
    if (std::fabs(v[i] - f.median) >= kStepOutlierShare * f.median) f.outliers.push_back(i);
  return f;
}

std::string outlier_text(const std::vector<double>& v, const StepFigures& f, long first_step) {
  std::string out;
  for (size_t i : f.outliers) {
    if (!out.empty()) out += ", ";
    out += fmt::format("step {} ({:.2f}x the median)", first_step + static_cast<long>(i),
                       f.median > 0 ? v[i] / f.median : 0.0);
  }
  return out;
}

}  // namespace hpcbench::stats
