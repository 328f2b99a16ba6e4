#pragma once
// `hpcbench report --tensorboard DIR`: the comparison as TensorBoard runs for
// its HParams dashboard. One run per configuration (a report row), named as
// the row; its repeats are that run's steps (repeats/samples_per_s at step
// 1..N), and its figures (the row's medians, the ones the report's tables
// show) are the HParams metrics. The top run (DIR itself) holds the
// experiment: which hparams and metrics the table has.
#include <filesystem>
#include <string>

#include "report/compare.h"

namespace hpcbench::report {

// Writes DIR (which must be absent, empty, or an earlier such report, which
// is replaced); returns the number of configurations written.
size_t write_tensorboard_report(const Comparison& comparison, const std::filesystem::path& dir);

}  // namespace hpcbench::report
