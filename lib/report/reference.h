#pragma once
// Published figures that users compare their runs with
// (results/reference/*.csv): rows in the results schema (a subset of its
// columns) plus `source`, saying where each figure was published. Each row
// is compared with the one-device row of its own file that has the same
// device, model, precision, sequence length and data, by the rules of
// compare.h.
#include <filesystem>
#include <string>
#include <vector>

#include "report/compare.h"

namespace hpcbench::report {

struct ReferenceSet {
  std::string name;  // the file's stem
  std::filesystem::path file;
  Comparison comparison;  // rows in the file's order, `source` filled
};

// Every *.csv in `dir`, by name. A file that does not read, or a row
// without a source, is skipped with a warning in `warnings`. Throws
// UserError when `dir` is not a folder.
std::vector<ReferenceSet> read_references(const std::filesystem::path& dir, std::vector<std::string>& warnings);

// The comparison of one file's rows, each against its group's baseline.
Comparison compare_within(const std::vector<results::LoadedRun>& rows, const std::vector<std::string>& sources);

}  // namespace hpcbench::report
