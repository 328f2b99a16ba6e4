#include "results/run_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "results/csv.h"

namespace hpcbench::results {

namespace fs = std::filesystem;

void fill_derived(RunResult& r) {
  if (r.samples_per_s == 0 && r.samples_timed > 0 && r.train_time_s > 0)
    r.samples_per_s = static_cast<double>(r.samples_timed) / r.train_time_s;
  if (r.samples_per_s_per_device == 0 && r.samples_per_s > 0 && r.world_size > 0)
    r.samples_per_s_per_device = r.samples_per_s / static_cast<double>(r.world_size);
  if (r.world_size <= 0) r.world_size = 1;
}

namespace {

std::vector<RunResult> read_json_file(const fs::path& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file));
  } catch (const nlohmann::json::parse_error& e) {
    // The byte offset tells a truncated file (error at its end) from a
    // corrupt one.
    fail("not valid JSON (byte {}; truncated or corrupt file?)", e.byte);
  }
  if (!j.is_object()) fail("not a run.json: the top level is not an object");
  const nlohmann::json& row = j.contains("result") ? j["result"] : j;
  if (!row.is_object()) fail("\"result\" is not an object");
  try {
    return {from_json(row)};
  } catch (const nlohmann::json::exception& e) {
    fail("a field has the wrong type ({})", e.what());
  }
}

std::vector<RunResult> read_csv_file(const fs::path& file) {
  auto records = parse_csv(read_file(file));
  if (records.empty()) fail("empty file");
  const CsvRecord& header = records.front();
  bool known = std::any_of(header.begin(), header.end(), [](const std::string& h) {
    return std::any_of(columns().begin(), columns().end(), [&](const Column& c) { return h == c.name; });
  });
  if (!known) fail("no hpcbench result columns in the header");
  if (records.size() < 2) fail("a header but no result row (truncated file?)");
  std::vector<RunResult> out;
  for (size_t i = 1; i < records.size(); ++i) {
    try {
      out.push_back(result_from_csv(header, records[i]));
    } catch (const UserError& e) {
      fail("row {}: {}", i + 1, e.what());
    }
  }
  return out;
}

bool hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

struct Reader {
  LoadedRuns out;
  std::set<fs::path> seen;

  void warn(const fs::path& p, const std::string& why) {
    out.warnings.push_back(fmt::format("skipping {}: {}", p.string(), why));
  }

  // Adds the runs in `file`; returns false (after warning) when it did not read.
  bool add_file(const fs::path& file, const std::string& fallback_id) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(file, ec);
    if (ec) key = file;
    if (!seen.insert(key).second) return true;
    try {
      auto rows = read_result_file(file);
      for (auto& r : rows) {
        if (r.run_id.empty()) r.run_id = fallback_id;
        fill_derived(r);
        out.runs.push_back({std::move(r), file});
      }
      return true;
    } catch (const UserError& e) {
      warn(file, e.what());
      return false;
    }
  }

  // Folders already walked, by device and inode: a link back to a folder
  // above would otherwise be walked until the path grows too long.
  std::set<std::pair<dev_t, ino_t>> walked;

  // exists() without throwing: a link loop (ELOOP) or a folder that cannot
  // be read is a warning about that path, not an internal error.
  bool present(const fs::path& p) {
    std::error_code ec;
    bool there = fs::exists(p, ec);
    if (ec) warn(p, why(ec));
    return there && !ec;
  }

  static std::string why(const std::error_code& ec) {
    if (ec.value() == ELOOP) return "a loop of symbolic links (ELOOP)";
    return ec.message();
  }

  void add_run_folder(const fs::path& dir) {
    std::string id = dir.filename().string();
    fs::path json = dir / "run.json", csv = dir / "summary.csv";
    if (present(json)) {
      if (add_file(json, id)) return;
      if (present(csv)) add_file(csv, id);  // the row survives in the other file
      return;
    }
    if (present(csv)) add_file(csv, id);
  }

  void add_folder(const fs::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return warn(dir, why(std::error_code(errno, std::generic_category())));
    if (!walked.insert({st.st_dev, st.st_ino}).second)
      return warn(dir, "a symbolic link back to a folder already read (a loop); not read again");
    std::error_code ec_json, ec_csv;
    bool has_json = fs::exists(dir / "run.json", ec_json), has_csv = fs::exists(dir / "summary.csv", ec_csv);
    if (has_json || has_csv || ec_json || ec_csv) return add_run_folder(dir);
    std::vector<fs::path> children;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (hidden(it->path())) continue;
      std::error_code dec;
      bool is_dir = it->is_directory(dec);
      if (dec) warn(it->path(), why(dec));
      else if (is_dir) children.push_back(it->path());
    }
    if (ec) return warn(dir, why(ec));
    // Sorted so that the report does not depend on the file system's order.
    std::sort(children.begin(), children.end());
    for (auto& c : children) add_folder(c);
  }

  void add(const fs::path& p) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec && ec.value() != ENOENT) return warn(p, why(ec));
    if (ec || !fs::exists(st)) return warn(p, "no such file or folder");
    if (fs::is_directory(st)) {
      size_t before = out.runs.size(), warnings = out.warnings.size();
      add_folder(p);
      if (out.runs.size() == before && out.warnings.size() == warnings) warn(p, "no run folders inside");
      return;
    }
    add_file(p, p.parent_path().filename().string());
  }
};

}  // namespace

std::vector<RunResult> read_result_file(const fs::path& file) {
  std::vector<RunResult> rows;
  if (file.extension() == ".json") rows = read_json_file(file);
  else if (file.extension() == ".csv") rows = read_csv_file(file);
  else fail("not a result file (expected run.json or a .csv)");
  // A newer schema may have changed what a column means: reading it as this
  // one would compare figures that are not alike.
  for (const auto& r : rows)
    if (r.schema_version > kSchemaVersion)
      fail("{}schema_version {} is newer than this hpcbench reads ({}); a newer hpcbench wrote it: compare it "
           "with that one", r.run_id.empty() ? "" : r.run_id + ": ", r.schema_version, kSchemaVersion);
  return rows;
}

LoadedRuns read_results(const std::vector<fs::path>& paths) {
  Reader reader;
  for (auto& p : paths) reader.add(p);
  return std::move(reader.out);
}

}  // namespace hpcbench::results
