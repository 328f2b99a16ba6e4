// The verdict test's false-positive rate and power by simulation
// (lib/stats/power.h), printed as the Markdown tables of
// docs/statistics.md, beside the rule it replaced (the percentile bootstrap
// interval of the ratio of medians excluding 1, 3 runs a side at least) and
// the exact Mann-Whitney test's smallest p-value. Seeded: the same tables
// every time.
//
//   build/bench/bench_verdicts [--trials N]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stats/power.h"
#include "stats/stats.h"

using namespace hpcbench::stats;

namespace {

// The old rule's rejection rate at effect 0: fewer trials, 2000 resamples
// each (a 95 % percentile interval moves by little between 2000 and 10000).
double bootstrap_rule_rate(size_t runs, double sigma, size_t trials) {
  SplitMix64 rng(0x626f6f74ull);
  auto normal = [&] {
    double u1 = (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53;
    double u2 = (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
  size_t hits = 0;
  std::vector<double> a(runs), b(runs);
  for (size_t t = 0; t < trials; ++t) {
    for (auto& x : a) x = 100 * std::exp(sigma * normal());
    for (auto& x : b) x = 100 * std::exp(sigma * normal());
    auto iv = ratio_interval(a, b, {.resamples = 2000, .level = 0.95, .seed = rng.next()});
    hits += iv.lo > 1 || iv.hi < 1;
  }
  return static_cast<double>(hits) / static_cast<double>(trials);
}

}  // namespace

int main(int argc, char** argv) {
  size_t trials = 20000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--trials") == 0) trials = std::strtoul(argv[i + 1], nullptr, 10);
  const std::vector<size_t> repeats = {2, 3, 4, 5, 10};
  struct Case {
    const char* where;
    Noise noise;
  };
  const std::vector<Case> cases = {
      {"H100, one call (1 %)", {0.01, 0, 1.3}},
      {"this 2-core machine idle, H100 across calls (3 %)", {0.03, 0, 1.3}},
      {"this machine, other builds running (5 %)", {0.05, 0, 1.3}},
      {"a shared node (10 %)", {0.10, 0, 1.3}},
      {"3 %, one run in ten disturbed 1.3x", {0.03, 0.1, 1.3}},
      {"5 %, one run in ten disturbed 1.3x", {0.05, 0.1, 1.3}},
  };
  std::printf("%zu simulated pairs per cell; the simulation's standard error at 5 %% is %.4f\n\n", trials,
              rate_standard_error(0.05, trials));
  auto table = [&](const char* title, double effect, bool power) {
    std::printf("%s\n\n| run-to-run spread |", title);
    for (size_t n : repeats) std::printf(" %zu runs |", n);
    std::printf("\n| --- |");
    for (size_t i = 0; i < repeats.size(); ++i) std::printf(" ---: |");
    std::printf("\n");
    for (auto& c : cases) {
      std::printf("| %s |", c.where);
      for (size_t n : repeats) {
        auto r = simulate_verdicts(n, effect, c.noise, trials);
        std::printf(" %.3f |", power ? r.right_way : r.rejected);
      }
      std::printf("\n");
    }
    std::printf("\n");
  };
  table("False-positive rate (no real difference; the test rejects at 5 %):", 0, false);
  table("Power for a real 10 % difference (called, and the right way round):", 0.10, true);
  table("Power for a real 5 % difference:", 0.05, true);
  std::printf("The rule it replaced, the 95 %% percentile bootstrap interval of the ratio of medians excluding 1, "
              "at no real difference (%zu pairs, 2000 resamples each):\n\n| spread | 3 runs | 5 runs | 10 runs |\n"
              "| --- | ---: | ---: | ---: |\n",
              trials / 10);
  for (double sigma : {0.03, 0.10})
    std::printf("| %.0f %% | %.3f | %.3f | %.3f |\n", sigma * 100, bootstrap_rule_rate(3, sigma, trials / 10),
                bootstrap_rule_rate(5, sigma, trials / 10), bootstrap_rule_rate(10, sigma, trials / 10));
  auto mw = mann_whitney_u({1.0, 2, 3}, {4.0, 5, 6});
  std::printf("\nThe exact Mann-Whitney test's smallest two-sided p-value at 3 runs a side: %.3f; at 4: %.3f; "
              "at 5: %.4f.\n",
              mw.p, mann_whitney_u({1.0, 2, 3, 4}, {5.0, 6, 7, 8}).p,
              mann_whitney_u({1.0, 2, 3, 4, 5}, {6.0, 7, 8, 9, 10}).p);
  return 0;
}
