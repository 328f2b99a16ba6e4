#include "stats/welch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace hpcbench::stats {

namespace {

// Continued fraction of the regularized incomplete beta function (modified
// Lentz), valid for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-16;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    for (double num : {m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + num * d;
      if (std::fabs(d) < tiny) d = tiny;
      c = 1 + num / c;
      if (std::fabs(c) < tiny) c = tiny;
      d = 1 / d;
      h *= d * c;
    }
    if (std::fabs(d * c - 1) < eps) break;
  }
  return h;
}

// I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

struct Moments {
  double mean = 0, var = 0;
};

Moments log_moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += std::log(x);
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (std::log(x) - m.mean) * (std::log(x) - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

}  // namespace

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t)) return 1;
  if (std::isinf(t)) return 0;
  return std::clamp(incomplete_beta(df / 2, 0.5, df / (df + t * t)), 0.0, 1.0);
}

double student_t_quantile(double q, double df) {
  if (q == 0.5) return 0;
  if (q < 0.5) return -student_t_quantile(1 - q, df);
  // P(T > t) = p/2 with p = 2(1 - q): bisect on the two-sided p, which
  // falls monotonically in t. Doubling first brackets it.
  const double target = 2 * (1 - q);
  double lo = 0, hi = 1;
  while (student_t_two_sided_p(hi, df) > target && hi < 1e300) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    double mid = (lo + hi) / 2;
    (student_t_two_sided_p(mid, df) > target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

WelchTest welch_log_test(const std::vector<double>& x, const std::vector<double>& y, double level) {
  WelchTest w;
  w.ratio.n = std::min(x.size(), y.size());
  auto positive = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), [](double a) { return a > 0; }); };
  if (x.empty() || y.empty() || !positive(x) || !positive(y)) {
    w.why = "a throughput that is not positive";
    w.ratio.n = 0;
    return w;
  }
  const auto a = log_moments(x), b = log_moments(y);
  w.ratio.point = w.ratio.lo = w.ratio.hi = std::exp(a.mean - b.mean);
  if (x.size() < kWelchMinRuns || y.size() < kWelchMinRuns) {
    w.why = "one run on a side has no spread to test against";
    return w;
  }
  const double n1 = static_cast<double>(x.size()), n2 = static_cast<double>(y.size());
  const double v1 = a.var / n1, v2 = b.var / n2, se = std::sqrt(v1 + v2);
  if (!(se > 0)) {
    w.why = "no spread within either side";
    return w;
  }
  w.defined = true;
  w.df = (v1 + v2) * (v1 + v2) / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1));
  w.t = (a.mean - b.mean) / se;
  w.p = student_t_two_sided_p(w.t, w.df);
  if (!(level > 0)) return w;
  const double half = student_t_quantile(1 - (1 - level) / 2, w.df) * se;
  w.ratio.lo = std::exp(a.mean - b.mean - half);
  w.ratio.hi = std::exp(a.mean - b.mean + half);
  return w;
}

}  // namespace hpcbench::stats
