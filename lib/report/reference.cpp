#include "report/reference.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "core/error.h"
#include "results/csv.h"
#include "specs/registry.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

namespace {

bool same_setup(const results::RunResult& a, const results::RunResult& b) {
  return same_device(a, b) && a.model == b.model && a.precision == b.precision && a.seq_length == b.seq_length &&
         a.data == b.data;
}

// The group's one-device row, preferring the one-device reference strategy.
const results::RunResult* group_baseline(const std::vector<results::LoadedRun>& rows, const results::RunResult& r) {
  const results::RunResult* best = nullptr;
  for (auto& c : rows) {
    const results::RunResult& b = c.result;
    if (b.world_size != 1 || b.status != "ok" || !same_setup(b, r)) continue;
    const auto& ref = strategies::reference_spec().name();
    if (!best || (b.strategy == ref && best->strategy != ref)) best = &b;
  }
  return best;
}

}  // namespace

Comparison compare_within(const std::vector<results::LoadedRun>& rows, const std::vector<std::string>& sources) {
  Comparison out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const results::RunResult* base = group_baseline(rows, rows[i].result);
    auto one = compare({rows[i]}, base ? std::optional<results::RunResult>(*base) : std::nullopt);
    ComparisonRow row = std::move(one.rows.front());
    row.source = sources.at(i);
    if (!base)
      out.warnings.push_back(fmt::format("{}: no one-device row with the same device, model, precision, seq "
                                         "length and data in the file to compare with",
                                         row.run.run_id));
    else if (!row.strong_mismatch.empty())
      out.warnings.push_back(
          fmt::format("{}: no speedup against {}: {}", row.run.run_id, base->run_id, row.strong_mismatch));
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::vector<ReferenceSet> read_references(const fs::path& dir, std::vector<std::string>& warnings) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail("no published figures at {}: {}; run from the repository root or give --reference-dir", dir.string(),
         ec ? ec.message() : "not a folder");
  std::vector<fs::path> files;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec) && it->path().extension() == ".csv") files.push_back(it->path());
  }
  if (ec) fail("--reference-dir {}: cannot list it: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  std::vector<ReferenceSet> sets;
  for (auto& file : files) {
    try {
      auto records = results::parse_csv(read_file_bounded(file, results::kMaxSummaryCsvBytes));
      if (records.size() < 2) fail("no rows");
      std::vector<results::LoadedRun> rows;
      std::vector<std::string> sources;
      for (size_t i = 1; i < records.size(); ++i) {
        std::map<std::string, std::string> extra;
        results::RunResult r = results::result_from_csv(records.front(), records[i], &extra);
        if (extra["source"].empty()) fail("row {} has no source", i + 1);
        results::fill_derived(r);
        rows.push_back({r, file});
        sources.push_back(extra["source"]);
      }
      sets.push_back({file.stem().string(), file, compare_within(rows, sources)});
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError& e) {
      warnings.push_back(fmt::format("skipping {}: {}", file.string(), e.what()));
    }
  }
  return sets;
}

}  // namespace hpcbench::report
