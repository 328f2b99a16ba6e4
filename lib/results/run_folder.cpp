#include "results/run_folder.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/injection.h"
#include "core/printable.h"
#include "core/write_probe.h"

namespace hpcbench::results {

namespace fs = std::filesystem;

void check_run_name(const std::string& run_name) { check_run_name(run_name, "--run-name"); }

void check_run_name(const std::string& run_name, const char* flag) {
  if (run_name.empty()) fail("{} '': a run needs a name (leave the flag out for the default)", flag);
  if (run_name.find('/') != std::string::npos || run_name.find('\0') != std::string::npos)
    fail("{} {}: must be one folder name inside --results-dir, without '/'", flag, printable(run_name));
  if (run_name == "." || run_name == "..")
    fail("{} {}: must name a folder inside --results-dir, not the folder itself or its parent", flag, printable(run_name));
  if (run_name.front() == '.')
    fail("{} {}: must not start with '.' (hidden names are for runs still being written)", flag, printable(run_name));
  // The temporary folder adds ".<name>.partial-<pid>"; NAME_MAX is 255.
  if (run_name.size() > 200)
    fail("{} {}...: longer than 200 bytes", flag, printable(run_name.substr(0, 40)));
  // The name goes into run.json (JSON is UTF-8: anything else failed there,
  // after the whole run) and onto terminals and report tables.
  for (unsigned char c : run_name)
    if (c < 0x20 || c == 0x7f)
      fail("{} {}: holds a control character (byte 0x{:02x}); names are shown in tables and logs", flag,
           printable(run_name), c);
  if (printable(run_name) != run_name)
    fail("{} {}: not valid UTF-8 (shown as \\xNN); a run's name is written into run.json, which is UTF-8", flag,
         printable(run_name));
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
  if (!fs::is_directory(results_dir, ec)) fail("--results-dir {}: not a folder", results_dir.string());
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

namespace {

// The name this process claimed (claim_run_folder): the hidden folder it
// writes into, held from before the first step, and the name it becomes.
struct Claim {
  fs::path results_dir;
  std::string run_name;
  fs::path partial, final_dir;
  // An empty claim left by a run that failed is given back (rmdir removes
  // only an empty folder: results written into it stay).
  ~Claim() { release(); }
  void release() {
    if (!partial.empty() && ::rmdir(partial.c_str()) == 0) ::rmdir(partial.parent_path().c_str());
    partial.clear();
  }
};
Claim g_claim;

// Claims live in the results folder's hidden .running/ (beside the live
// TensorBoard logs, tensorboard/run_log.h): on the results' file system, so
// the rename into place is atomic, and out of sight of readers. Run names
// never start with '.', so no live log has a claim's name.
fs::path running_dir(const fs::path& results_dir) { return results_dir / ".running"; }

fs::path partial_of(const fs::path& results_dir, const std::string& name) {
  return running_dir(results_dir) / fmt::format(".{}.partial", name);
}

void make_running_dir(const fs::path& results_dir) {
  std::error_code ec;
  fs::create_directories(running_dir(results_dir), ec);
  if (ec) fail("--results-dir {}: cannot create {}: {}", results_dir.string(), running_dir(results_dir).string(),
               ec.message());
}

}  // namespace

fs::path claim_run_folder(const fs::path& results_dir, const std::string& run_name) {
  check_run_name(run_name);
  if (!g_claim.partial.empty() && g_claim.results_dir == results_dir && g_claim.run_name == run_name)
    return g_claim.final_dir;
  std::error_code ec;
  make_running_dir(results_dir);
  // mkdir(2) is atomic: of two runs that want one name, one gets its hidden
  // folder and the other goes on to the next name. A visible folder of that
  // name (a finished run) is passed over too.
  for (int i = 1; i < 100000; ++i) {
    const std::string name = i == 1 ? run_name : fmt::format("{}-{}", run_name, i);
    if (fs::symlink_status(results_dir / name, ec).type() != fs::file_type::not_found) continue;
    const fs::path partial = partial_of(results_dir, name);
    if (::mkdir(partial.c_str(), 0755) == 0) {
      if (!g_claim.partial.empty()) ::rmdir(g_claim.partial.c_str());
      g_claim.results_dir = results_dir;
      g_claim.run_name = run_name;
      g_claim.partial = partial;
      g_claim.final_dir = results_dir / name;
      return g_claim.final_dir;
    }
    if (errno != EEXIST)
      fail("--results-dir {}: cannot create {}: {}", results_dir.string(), partial.string(), std::strerror(errno));
  }
  fail("--results-dir {}: no free name for run {} (from {}-2 to {}-99999 all taken)", results_dir.string(), run_name,
       run_name, run_name);
}

namespace {

// The hidden folder that holds a repeat group's id while its repeats run.
struct GroupClaim {
  fs::path marker;
  ~GroupClaim() { release(); }
  void release() {
    if (!marker.empty() && ::rmdir(marker.c_str()) == 0) ::rmdir(marker.parent_path().c_str());
    marker.clear();
  }
};
GroupClaim g_group;

}  // namespace

void release_claims() {
  g_claim.release();
  g_group.release();
}

std::string claim_repeat_group(const fs::path& results_dir, const std::string& group) {
  check_run_name(group);
  std::error_code ec;
  make_running_dir(results_dir);
  // A group id is free when no repeat of it was written (<id>-r1) and no
  // other --repeats holds it now (mkdir(2) of its marker, which one process
  // alone can make): two groups of one name, at once or one after the
  // other, are never merged into one.
  for (int i = 1; i < 100000; ++i) {
    const std::string id = i == 1 ? group : fmt::format("{}-{}", group, i);
    if (fs::symlink_status(results_dir / (id + "-r1"), ec).type() != fs::file_type::not_found) continue;
    if (fs::symlink_status(partial_of(results_dir, id + "-r1"), ec).type() != fs::file_type::not_found) continue;
    const fs::path marker = running_dir(results_dir) / fmt::format(".{}.repeats", id);
    if (::mkdir(marker.c_str(), 0755) == 0) {
      if (!g_group.marker.empty()) ::rmdir(g_group.marker.c_str());
      g_group.marker = marker;
      return id;
    }
    if (errno != EEXIST)
      fail("--results-dir {}: cannot create {}: {}", results_dir.string(), marker.string(), std::strerror(errno));
  }
  fail("--results-dir {}: no free repeat group id for {}", results_dir.string(), group);
}

fs::path write_run_folder(const fs::path& results_dir, const std::string& run_name, RunFiles run) {
  // The space held since before the first step is the results' now.
  release_reserve();
  const fs::path final_dir = claim_run_folder(results_dir, run_name);
  const fs::path tmp = g_claim.partial;
  // The run id is the folder's final name, claimed before writing so that the
  // files inside agree with where they end up.
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
    g_claim = Claim{};
    throw;
  }
  if (auto delay = injected_number("rename_delay_ms", 600000))
    std::this_thread::sleep_for(std::chrono::milliseconds(*delay));
  // rename(2) of a directory is atomic and fails rather than replacing a
  // non-empty directory. The name is this process's claim; only a writer
  // that does not claim (an older version) can have taken it: the results
  // then stay where they were written, and the message says where.
  if (std::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    int e = errno;
    g_claim.partial.clear();
    fail("cannot move the results into {}: {}; they are kept in {}", final_dir.string(), std::strerror(e),
         tmp.string());
  }
  g_claim.partial.clear();
  g_claim = Claim{};
  ::rmdir(running_dir(results_dir).c_str());  // when nothing else runs there
  return final_dir;
}

}  // namespace hpcbench::results
