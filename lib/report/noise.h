#pragma once
// Noise warnings: what makes a run's figures untrustworthy, each named with
// the run and what to do about it (hyperfine's outlier warnings, for
// training runs). The thresholds: step-time coefficient of
// variation over 10 % within a run, a repeat more than 3 scaled MADs from
// its row's median throughput, a first timed step far slower than the
// median (warm-up too short), step times drifting across the run.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "report/compare.h"
#include "results/run_reader.h"
#include "results/steps.h"

namespace hpcbench::report {

inline constexpr double kMaxStepCv = 0.10;
inline constexpr double kOutlierMads = 3.0;
inline constexpr double kSlowFirstStep = 1.5;  // x the median of the timed steps
inline constexpr double kMaxDrift = 0.10;

// `steps`: by run id, the runs' series (runs without one are checked on the
// figures of their result alone: the CV from step_ms_stddev / step_ms_mean,
// the outlier steps from step_outliers). Timed steps that stand out
// (stats/steps.h) are named too.
std::vector<NoiseWarning> noise_warnings(const Comparison& c, const std::map<std::string, results::StepSeries>& steps);

// The terminal's form: one line per row with warnings (how many, over how
// many of its runs, and the worst), then once what to do; report.md keeps
// every warning.
std::vector<std::string> noise_summary_lines(const std::vector<NoiseWarning>& noise);
inline constexpr const char* kNoiseRemedy =
    "to reduce noise, run on an exclusive node (sbatch --exclusive) or with nothing else running, with more "
    "steps (--max-steps) and repeats (--repeats)";

// Training loss against step, each row's run (the median repeat) against its
// baseline's curve: runs with the same seed, data and global batch train the
// same model, so their curves coincide up to dropout masks (drawn per rank)
// and float reassociation. The line states the largest deviation over the
// steps both ran; nothing without curves to compare.
std::vector<std::string> loss_deviation_lines(const Comparison& c, const std::map<std::string, results::StepSeries>& steps);

// The timed steps of a series: the last `timed_steps` of them.
std::vector<double> timed(const std::vector<double>& all, int64_t timed_steps);

}  // namespace hpcbench::report
