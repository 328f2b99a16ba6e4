#pragma once
// How often the verdict test (welch.h) calls a difference at 5 %, by
// simulation: the false-positive rate when two configurations are the same
// and the power when one is truly faster, at a given number of repeats and
// a given run-to-run noise. docs/statistics.md tabulates it for the repeat
// counts the main job and the sweeps use and the spreads seen on the CPU
// machine and on the H100; tests/stats checks the false-positive rate
// against its stated bound. Seeded, so the tables are reproducible.
#include <cstddef>
#include <cstdint>

namespace hpcbench::stats {

// One run's throughput: base x (1 + effect on the faster side) x
// exp(sigma z), z standard normal, and with probability spike_rate the run
// is disturbed (a neighbour, a throttled core) and its throughput divided by
// spike_factor. sigma is the run-to-run spread of log throughput, close to
// its coefficient of variation at these sizes.
struct Noise {
  double sigma = 0.03;
  double spike_rate = 0;
  double spike_factor = 1.3;
};

struct Rates {
  double rejected = 0;     // p < alpha, either direction
  double right_way = 0;    // p < alpha and the faster side called faster
  size_t trials = 0;
};

// `trials` simulated pairs of `runs` repeats a side; effect 0 measures the
// false-positive rate (rejected), effect > 0 the power (right_way).
Rates simulate_verdicts(size_t runs, double effect, const Noise& noise, size_t trials, double alpha = 0.05,
                        uint64_t seed = 0x6870636265ull);

// The binomial standard error of a rate estimated from `trials` draws.
double rate_standard_error(double rate, size_t trials);

}  // namespace hpcbench::stats
