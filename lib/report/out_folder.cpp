#include "report/out_folder.h"

#include <string>

#include "core/atomic_file.h"
#include "core/error.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOutMarker = ".hpcbench-report";

// What `report --out` writes (cmd_report, plot.cpp, efficiency.cpp), the
// files of a report from before the marker.
bool report_file(const std::string& name) {
  for (const char* ext : {".svg", ".png", ".dat", ".gp"})
    if (name.ends_with(ext)) return true;
  return name == "report.md" || name == "report.csv" || name == "efficiency.csv" ||
         (name.starts_with(".gnuplot") && name.ends_with(".log")) || name == ".efficiency-gnuplot.log" ||
         name.starts_with("report.md.tmp.") || name.starts_with("report.csv.tmp.");
}

}  // namespace

void prepare_out_folder(const fs::path& dir) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    fail("--out {}: cannot look at it: {}", dir.string(), ec.message());
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) fail("--out {}: exists and is not a folder", dir.string());
    const bool marked = fs::symlink_status(dir / kOutMarker, ec).type() == fs::file_type::regular;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!marked && !report_file(name))
        fail("--out {}: the folder holds {}, which no report writes, so it is not an earlier report's; give an "
             "empty or new folder (a report replaces the whole folder)",
             dir.string(), name);
    }
    if (ec) fail("--out {}: cannot list it: {}", dir.string(), ec.message());
    remove_tree(dir);
  }
  fs::create_directories(dir, ec);
  if (ec) fail("--out {}: cannot create it: {}", dir.string(), ec.message());
  write_file_atomic(dir / kOutMarker, "written by hpcbench report --out; the next report into this folder replaces it\n");
}

}  // namespace hpcbench::report
