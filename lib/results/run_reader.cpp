#include "results/run_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <string_view>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/bounded_read.h"
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

nlohmann::json parse_json(const fs::path& file) {
  try {
    return nlohmann::json::parse(read_file_bounded(file, kMaxRunJsonBytes));
  } catch (const nlohmann::json::parse_error& e) {
    // The byte offset tells a truncated file (error at its end) from a
    // corrupt one.
    fail("not valid JSON (byte {}; truncated or corrupt file?)", e.byte);
  } catch (const nlohmann::json::exception& e) {
    // A number no double holds (1e400) is out_of_range, not a parse_error.
    fail("not a JSON file this can read ({})", e.what());
  }
}

std::vector<RunResult> read_json_file(const fs::path& file, std::map<std::string, std::string>* settings) {
  nlohmann::json j = parse_json(file);
  if (!j.is_object()) fail("not a run.json: the top level is not an object");
  const nlohmann::json& row = j.contains("result") ? j["result"] : j;
  if (!row.is_object()) fail("\"result\" is not an object");
  RunResult r;
  try {
    r = from_json(row);
  } catch (const nlohmann::json::exception& e) {
    fail("a field has the wrong type ({})", e.what());
  }
  if (settings && j.contains("config") && j["config"].is_object())
    for (auto& [k, v] : j["config"].items())
      if (v.is_string()) (*settings)[k] = v.get<std::string>();
  return {r};
}

std::vector<RunResult> read_csv_file(const fs::path& file) {
  auto records = parse_csv(read_file_bounded(file, kMaxSummaryCsvBytes));
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
      std::map<std::string, std::string> settings;
      auto rows = read_result_file(file, &settings);
      for (auto& r : rows) {
        if (r.run_id.empty()) r.run_id = fallback_id;
        fill_derived(r);
        out.runs.push_back({std::move(r), file, settings});
      }
      return true;
    } catch (const Interrupted&) {
      throw;
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

namespace {

// What no run of this program can produce: beyond them a figure is a broken
// or hand-made file, and dividing by it would print a 300-digit efficiency.
// Generous by orders of magnitude, so that no real run meets them. NaN and
// infinity pass: they are figures the report already shows as untrusted.
struct Bound {
  const char* column;
  double max;
};
constexpr double kMaxRanks = 1 << 20;
constexpr Bound kBounds[] = {
    {"nodes", kMaxRanks},         {"gpus_per_node", kMaxRanks},  {"world_size", kMaxRanks},
    {"seq_length", 1 << 24},      {"batch_per_device", 1e9},     {"global_batch", 1e12},
    {"grad_accum", 1e9},          {"samples_per_s", 1e9},        {"samples_per_s_per_device", 1e9},
    {"tokens_per_s", 1e13},       {"step_ms_median", 1e9},       {"step_ms_p90", 1e9},
    {"step_ms_max", 1e9},         {"step_ms_mean", 1e9},         {"step_ms_stddev", 1e9},
    {"data_ms", 1e9},             {"forward_ms", 1e9},           {"backward_ms", 1e9},
    {"comm_ms", 1e9},             {"comm_exposed_ms", 1e9},      {"optimizer_ms", 1e9},
    {"train_time_s", 1e8},        {"wall_time_s", 1e8},          {"mfu", 100},
    {"hfu", 100},                 {"tflops_per_device", 1e6},    {"peak_tflops", 1e6},
};
// Any other figure: beyond this it is no measurement either.
constexpr double kMaxAnyFigure = 1e18;

// Throws UserError naming the first figure outside what a run can produce.
void check_plausible(const RunResult& r) {
  for (auto& c : columns()) {
    double v = 0;
    bool is_int = false;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<T, double>) v = r.*m;
          else if constexpr (std::is_same_v<T, int64_t>) v = static_cast<double>(r.*m), is_int = true;
        },
        c.member);
    if (!std::isfinite(v)) continue;
    double max = kMaxAnyFigure;
    for (auto& b : kBounds)
      if (std::string_view(b.column) == c.name) max = b.max;
    if (std::fabs(v) > max)
      fail("{} {} is beyond what any run produces (at most {:g}); a damaged or hand-made file",
           c.name, is_int ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{:g}", v), max);
  }
  for (auto [name, v] : {std::pair<const char*, int64_t>{"nodes", r.nodes}, {"gpus_per_node", r.gpus_per_node},
                         {"world_size", r.world_size}})
    if (v < 0) fail("{} {} is negative", name, v);
}

}  // namespace

std::vector<RunResult> read_result_file(const fs::path& file, std::map<std::string, std::string>* settings) {
  std::vector<RunResult> rows;
  if (file.extension() == ".json") rows = read_json_file(file, settings);
  else if (file.extension() == ".csv") rows = read_csv_file(file);
  else fail("not a result file (expected run.json or a .csv)");
  // A newer schema may have changed what a column means: reading it as this
  // one would compare figures that are not alike.
  for (const auto& r : rows)
    if (r.schema_version > kSchemaVersion)
      fail("{}schema_version {} is newer than this hpcbench reads ({}); a newer hpcbench wrote it: compare it "
           "with that one", r.run_id.empty() ? "" : r.run_id + ": ", r.schema_version, kSchemaVersion);
  for (const auto& r : rows) {
    try {
      check_plausible(r);
    } catch (const UserError& e) {
      fail("{}{}", r.run_id.empty() ? "" : r.run_id + ": ", e.what());
    }
  }
  return rows;
}

LoadedRuns read_results(const std::vector<fs::path>& paths) {
  Reader reader;
  for (auto& p : paths) reader.add(p);
  return std::move(reader.out);
}

}  // namespace hpcbench::results
