#include "stats/power.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "stats/stats.h"
#include "stats/welch.h"

namespace hpcbench::stats {

namespace {

// Uniform in (0, 1): 53 bits, never 0 (the log below).
double uniform(SplitMix64& rng) { return (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53; }

// Box-Muller; one of the pair is enough here.
double normal(SplitMix64& rng) {
  return std::sqrt(-2 * std::log(uniform(rng))) * std::cos(2 * std::numbers::pi * uniform(rng));
}

void draw(std::vector<double>& out, size_t runs, double scale, const Noise& noise, SplitMix64& rng) {
  out.resize(runs);
  for (auto& v : out) {
    v = scale * std::exp(noise.sigma * normal(rng));
    if (noise.spike_rate > 0 && uniform(rng) < noise.spike_rate) v /= noise.spike_factor;
  }
}

}  // namespace

Rates simulate_verdicts(size_t runs, double effect, const Noise& noise, size_t trials, double alpha, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<double> fast, slow;
  size_t rejected = 0, right = 0;
  for (size_t i = 0; i < trials; ++i) {
    draw(fast, runs, 100 * (1 + effect), noise, rng);
    draw(slow, runs, 100, noise, rng);
    auto w = welch_log_test(fast, slow, 0);
    if (!w.defined || !(w.p < alpha)) continue;
    ++rejected;
    right += w.t > 0;
  }
  Rates r;
  r.trials = trials;
  r.rejected = trials ? static_cast<double>(rejected) / static_cast<double>(trials) : 0;
  r.right_way = trials ? static_cast<double>(right) / static_cast<double>(trials) : 0;
  return r;
}

double rate_standard_error(double rate, size_t trials) {
  return trials ? std::sqrt(rate * (1 - rate) / static_cast<double>(trials)) : 0;
}

}  // namespace hpcbench::stats
