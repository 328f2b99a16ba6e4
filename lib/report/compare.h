#pragma once
// Scaling figures of runs against a baseline run (one per device): the
// Comparison that every report exporter (terminal, Markdown, CSV, plots)
// renders.
//
// Strong scaling (speedup, efficiency) needs the same work on the same
// hardware: device type and name, model, precision, sequence length, data
// and global batch must match the baseline's. Weak scaling and memory
// compare the work of one device, so they need the same per-device batch
// instead of the same global batch. A
// run that does not qualify is shown with the reason and "n/c" cells; its
// figures are never divided silently.
#include <optional>
#include <string>
#include <vector>

#include "results/run_reader.h"
#include "results/run_record.h"
#include "stats/stats.h"
#include "stats/welch.h"

namespace hpcbench::report {

// Runs of one configuration (strategy and options, shape, device, precision,
// model, sequence length, data, batch) form one row: `run` is the repeat of
// median throughput with the group's median throughput in samples_per_s
// (and per device), so every figure divides medians.
struct ComparisonRow {
  results::RunResult run;
  // Every status-ok run of the configuration, by throughput (just `run` for
  // one run or a run that is not ok).
  std::vector<results::RunResult> repeats;
  // Bootstrap intervals (stats/stats.h; n == 1: one run, no interval).
  std::optional<stats::Interval> throughput_ci, speedup_ci, efficiency_ci;
  std::string origin;  // file it was read from
  std::string source;  // for published figures: where they come from
  // What this row is divided by: Comparison::baseline, or for a run on
  // another device the baseline of its own device when the runs hold one.
  std::optional<results::RunResult> baseline;
  bool is_baseline = false;
  // Empty optionals: not computed (status not ok, no baseline, not comparable).
  std::optional<double> speedup;          // T_base / T for the same samples
  std::optional<double> efficiency;       // speedup / (world size / baseline world size)
  std::optional<double> weak_efficiency;  // per-device throughput / the baseline's
  std::optional<double> memory_ratio;     // peak memory per device / the baseline's (either kind comparable)
  std::string strong_mismatch;  // why speedup and efficiency are n/c; "" when comparable
  std::string weak_mismatch;    // why weak efficiency and memory are n/c
};

// Two rows doing the same work (strongly comparable: speedup rules) against
// each other, on the same or different numbers of devices (a row against its
// baseline is the speedup's verdict): `faster` has the higher geometric mean
// throughput. One test decides and its own figures are printed: Welch's
// t-test on log throughput (stats/welch.h, docs/statistics.md says why),
// significant when p < 5 %; `ratio` is that test's interval of the ratio of
// geometric means, so it excludes 1 exactly when the verdict is significant.
inline constexpr double kVerdictAlpha = 0.05;
inline constexpr size_t kMinRunsForVerdict = stats::kWelchMinRuns;
// The repeats a side that see a real 10 % difference at 3 % run-to-run noise
// 19 times in 20 (docs/statistics.md's simulation); what a line that cannot
// decide recommends.
inline constexpr size_t kRecommendedRepeats = 5;
struct Verdict {
  std::string faster, slower;  // row names (row_name)
  int64_t devices = 0, slower_devices = 0;  // faster's, slower's
  size_t faster_runs = 0, slower_runs = 0;
  stats::WelchTest test;  // test.ratio: faster's throughput / slower's
  bool significant = false;
};

// A noise warning (noise.h): the row and run it is about, what was seen
// ("step times vary by 23 %"), the whole line with what to do, and how far
// past its threshold it is (1: at it), which picks a row's worst case.
struct NoiseWarning {
  std::string row, run, what, text;
  double severity = 0;
};

struct Comparison {
  std::optional<results::RunResult> baseline;  // the one chosen (auto or --baseline)
  std::vector<results::RunResult> device_baselines;  // the other devices' baselines some rows use, in row order
  std::vector<ComparisonRow> rows;  // by strategy, then world size
  std::vector<Verdict> verdicts;  // by devices, then faster first
  std::vector<std::string> warnings;
  // Disturbed runs: every one in report.md, one line per row in the terminal.
  std::vector<NoiseWarning> noise;
  // What a reader must know to read the table right (not a problem with it).
  std::vector<std::string> notes;
};

// The reasons, joined by "; " ("global batch 32 vs baseline 8"); "" when
// the runs compare. A value unknown on one side ("?") differs from any
// known one; unknown on both sides counts as the same. The exception is the
// device name: unknown on either side is not a difference (see same_device).
std::string strong_mismatch(const results::RunResult& run, const results::RunResult& base);
std::string weak_mismatch(const results::RunResult& run, const results::RunResult& base);

// Same device type, and the same device name where both runs state one.
bool same_device(const results::RunResult& a, const results::RunResult& b);

// The figures of `r` no ratio may be taken of: NaN, infinite or negative
// throughput, step time or training time ("samples_per_s is nan, ..."), or
// "" when they can all be trusted.
std::string untrusted_figures(const results::RunResult& r);

// run's throughput over base's (nullopt when either has untrusted figures):
// samples/s when both have it, otherwise the
// inverse ratio of training times when both processed the same samples
// (published figures often give only a time for a fixed number of epochs).
std::optional<double> throughput_ratio(const results::RunResult& run, const results::RunResult& base);

// The settings of a result that change the work a step does, named as the
// report names them: strategy and options, shape, device, precision, model,
// seq length, data, batches, grad accum, activation checkpointing.
std::vector<std::pair<std::string, std::string>> work_fields(const results::RunResult& r);
// The configuration that makes runs repeats of each other (the row key):
// work_fields. Runs with the same key group unless run.json's recorded
// settings (LoadedRun::settings) differ in one that changes the work; the
// report then notes which.
std::string configuration_key(const results::RunResult& r);
// A row's name: its runs' repeat_group where they share one, else the run
// id (with "+N" for N more runs).
std::string row_name(const ComparisonRow& row);
// Rows whose configuration ran more than once.
bool has_repeats(const Comparison& c);
// "ddp > fsdp = zero" per shape: ">" only where significant.
std::vector<std::string> ranking_lines(const Comparison& c);

// spec "auto": the status-ok run with world size 1 and strategy baseline
// that the most runs compare with (same model, precision, sequence length
// and data, on the same device); among equals the newest. Otherwise spec is
// a run id, and an unknown one throws UserError listing the ids read, as
// does one whose status is not ok or whose figures cannot be trusted.
// nullopt: auto found none.
// Either way, compare() gives the runs on other devices their own device's
// baseline by the auto rule when there is one.
std::optional<size_t> choose_baseline(const std::vector<results::RunResult>& runs, const std::string& spec);

// Strategy order of the tables: the documented strategies in the README's
// order, then the others alphabetically.
bool row_before(const results::RunResult& a, const results::RunResult& b);

// `baseline` serves the runs on its device; runs on another device are
// compared with the auto baseline of their device among `runs`, or, where
// there is none, refused against `baseline` with the device as the reason.
Comparison compare(const std::vector<results::LoadedRun>& runs, const std::optional<results::RunResult>& baseline);

}  // namespace hpcbench::report
