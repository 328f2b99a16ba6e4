#include "stats/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace hpcbench::stats {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  // Sample standard deviation (n - 1), as hyperfine and numpy(ddof=1).
  s.stddev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0;
  s.median = percentile(v, 0.5);
  s.p90 = percentile(v, 0.9);
  return s;
}

double coefficient_of_variation(const std::vector<double>& v) {
  auto s = summarize(v);
  return s.n > 1 && s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0;
}

double mad(const std::vector<double>& v) {
  double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(dev);
}

std::vector<size_t> mad_outliers(const std::vector<double>& v, double k) {
  std::vector<size_t> out;
  double scale = mad(v) * kMadNormalScale;
  if (!(scale > 0)) return out;
  double m = median(v);
  for (size_t i = 0; i < v.size(); ++i)
    if (std::fabs(v[i] - m) > k * scale) out.push_back(i);
  return out;
}

double drift(const std::vector<double>& v) {
  size_t third = v.size() / 3;
  if (third == 0) return 0;
  double first = median({v.begin(), v.begin() + static_cast<std::ptrdiff_t>(third)});
  double last = median({v.end() - static_cast<std::ptrdiff_t>(third), v.end()});
  return first != 0 ? last / first - 1 : 0;
}

namespace {

void resample(const std::vector<double>& v, SplitMix64& rng, std::vector<double>& out) {
  out.resize(v.size());
  for (auto& x : out) x = v[rng.next() % v.size()];
}

Interval percentile_interval(double point, std::vector<double> stats, size_t n, const Bootstrap& b) {
  Interval iv{point, point, point, n};
  if (n < 2 || stats.empty()) return iv;
  double tail = (1 - b.level) / 2;
  std::sort(stats.begin(), stats.end());
  iv.lo = percentile(stats, tail);
  iv.hi = percentile(stats, 1 - tail);
  return iv;
}

}  // namespace

Interval median_interval(const std::vector<double>& v, const Bootstrap& b) {
  if (v.empty()) return {};
  SplitMix64 rng(b.seed);
  std::vector<double> stats, sample;
  if (v.size() > 1) {
    stats.reserve(static_cast<size_t>(b.resamples));
    for (int i = 0; i < b.resamples; ++i) {
      resample(v, rng, sample);
      stats.push_back(median(sample));
    }
  }
  return percentile_interval(median(v), std::move(stats), v.size(), b);
}

Interval ratio_interval(const std::vector<double>& num, const std::vector<double>& den, const Bootstrap& b) {
  if (num.empty() || den.empty()) return {};
  size_t n = std::min(num.size(), den.size());
  SplitMix64 rng(b.seed);
  std::vector<double> stats, a, c;
  if (n > 1) {
    stats.reserve(static_cast<size_t>(b.resamples));
    for (int i = 0; i < b.resamples; ++i) {
      resample(num, rng, a);
      resample(den, rng, c);
      stats.push_back(median(a) / median(c));
    }
  }
  return percentile_interval(median(num) / median(den), std::move(stats), n, b);
}

namespace {

// P(U >= u) under H0 for sample sizes m, n without ties: the counts of U are
// the coefficients of the Gaussian binomial [m+n choose m]_q.
double exact_sf(double u, size_t m, size_t n) {
  size_t top = m * n;
  std::vector<double> c(top + 1, 0.0);
  c[0] = 1;
  // Multiply by (1 - q^(n+i)) and divide by (1 - q^i), i = 1..m; every
  // intermediate is a polynomial (the Gaussian binomial of i and n).
  std::vector<double> next(top + 1);
  for (size_t i = 1; i <= m; ++i) {
    size_t s = n + i;
    for (size_t k = 0; k <= top; ++k) next[k] = c[k] - (k >= s ? c[k - s] : 0.0);
    for (size_t k = 0; k <= top; ++k) c[k] = next[k] + (k >= i ? c[k - i] : 0.0);
  }
  double total = std::accumulate(c.begin(), c.end(), 0.0), tail = 0;
  for (size_t k = 0; k <= top; ++k)
    if (static_cast<double>(k) >= u - 1e-9) tail += c[k];
  return tail / total;
}

}  // namespace

RankTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  RankTest t;
  if (x.empty() || y.empty()) return t;
  const double n1 = static_cast<double>(x.size()), n2 = static_cast<double>(y.size());
  // Mid-ranks of the pooled sample.
  std::vector<std::pair<double, int>> all;
  for (double v : x) all.push_back({v, 0});
  for (double v : y) all.push_back({v, 1});
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first < b.first; });
  double r1 = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2, size = static_cast<double>(j - i);
    if (j - i > 1) ties = true;
    tie_term += size * size * size - size;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) r1 += rank;
    i = j;
  }
  t.u = r1 - n1 * (n1 + 1) / 2;
  double u = std::max(t.u, n1 * n2 - t.u);
  t.exact = !(x.size() > 8 && y.size() > 8) && !ties;
  if (t.exact) {
    t.p = exact_sf(u, std::min(x.size(), y.size()), std::max(x.size(), y.size()));
  } else {
    double n = n1 + n2;
    double s = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
    double z = (u - n1 * n2 / 2 - 0.5) / s;
    t.p = s > 0 ? 0.5 * std::erfc(z / std::sqrt(2.0)) : 1.0;
  }
  t.p = std::clamp(2 * t.p, 0.0, 1.0);
  return t;
}

}  // namespace hpcbench::stats
