#include "results/run_folder.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/write_probe.h"

namespace hpcbench::results {

namespace fs = std::filesystem;

void check_run_name(const std::string& run_name) {
  if (run_name.empty()) fail("--run-name '': a run needs a name (leave the flag out for the default)");
  if (run_name.find('/') != std::string::npos || run_name.find('\0') != std::string::npos)
    fail("--run-name {}: must be one folder name inside --results-dir, without '/'", run_name);
  if (run_name == "." || run_name == "..")
    fail("--run-name {}: must name a folder inside --results-dir, not the folder itself or its parent", run_name);
  if (run_name.front() == '.')
    fail("--run-name {}: must not start with '.' (hidden names are for runs still being written)", run_name);
  // The temporary folder adds ".<name>.partial-<pid>"; NAME_MAX is 255.
  if (run_name.size() > 200) fail("--run-name {}...: longer than 200 characters", run_name.substr(0, 40));
}

namespace {

// The space reserve_results_space holds: an unlinked file's blocks, freed
// when it is closed (or the process ends, however it ends).
int g_reserve_fd = -1;

void release_reserve() {
  if (g_reserve_fd >= 0) ::close(g_reserve_fd);
  g_reserve_fd = -1;
}

}  // namespace

void check_results_dir(const fs::path& results_dir) {
  if (results_dir.empty()) fail("--results-dir '': needs a folder");
  std::error_code ec;
  fs::create_directories(results_dir, ec);
  if (ec) fail("--results-dir {}: cannot create it: {}", results_dir.string(), ec.message());
  if (!fs::is_directory(results_dir)) fail("--results-dir {}: not a folder", results_dir.string());
  // A folder and a file with data in it: a full disk still makes empty
  // folders and files, and would be found only once the run is over.
  if (int e = write_probe(results_dir, kResultsProbeBytes))
    fail("--results-dir {}: cannot write there ({}), so the run's results could not be saved", results_dir.string(),
         std::strerror(e));
}

void reserve_results_space(const fs::path& results_dir, int64_t bytes) {
  release_reserve();
  g_reserve_fd = allocated_file(results_dir, static_cast<off_t>(bytes));
  if (g_reserve_fd < 0) {
    int e = errno;
    fail("--results-dir {}: cannot set aside {:.1f} MiB for the run's results ({}); free some space there or "
         "choose another --results-dir",
         results_dir.string(), static_cast<double>(bytes) / 1048576.0, std::strerror(e));
  }
}

fs::path write_run_folder(const fs::path& results_dir, const std::string& run_name, RunFiles run) {
  check_run_name(run_name);
  // The space held since before the first step is the results' now.
  release_reserve();
  std::error_code ec;
  fs::create_directories(results_dir, ec);
  if (ec) fail("cannot create the results folder {}: {}", results_dir.string(), ec.message());

  fs::path tmp = results_dir / fmt::format(".{}.partial-{}", run_name, ::getpid());
  remove_tree(tmp);
  fs::create_directories(tmp, ec);
  if (ec) fail("cannot create {}: {}", tmp.string(), ec.message());

  // The run id is the folder's final name, chosen before writing so that the
  // files inside agree with where they end up.
  fs::path final_dir = results_dir / run_name;
  for (int i = 2; fs::exists(final_dir); ++i) final_dir = results_dir / fmt::format("{}-{}", run_name, i);
  run.result.run_id = final_dir.filename().string();

  try {
    write_file_atomic(tmp / "summary.csv", csv_header() + csv_row(run.result));
    nlohmann::json j = run.details.is_object() ? run.details : nlohmann::json::object();
    j["steps"] = steps_json(run.steps);
    if (!run.rank_timing.empty()) j["rank_timing_ms"] = rank_timing_json(run.rank_timing);
    j["result"] = to_json(run.result);
    write_file_atomic(tmp / "run.json", j.dump(1));
    write_file_atomic(tmp / "loss.csv", loss_csv(run.steps));
    for (auto& [name, content] : run.files) write_file_atomic(tmp / name, content);
  } catch (...) {
    remove_tree(tmp);
    throw;
  }
  // rename(2) of a directory is atomic and fails rather than replacing a
  // non-empty directory, so a concurrent run that took the name first wins.
  if (std::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    int e = errno;
    remove_tree(tmp);
    fail("cannot move the results into {}: {}", final_dir.string(), std::strerror(e));
  }
  return final_dir;
}

}  // namespace hpcbench::results
