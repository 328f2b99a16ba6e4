// The whole path a user takes: real short runs under baseline, ddp (two
// local ranks) and dp (two replicas) into one results folder, then
// `hpcbench report` over that folder. Each run's figures must reach the
// table, and a run whose global batch differs from the baseline's must be
// shown as not comparable, with the reason, instead of a silent ratio.
#include "test_catch.h"

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

// One CSV record; quoted cells may hold commas and doubled quotes.
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
}

// The report's CSV rows by run id, each a map column -> cell. Lines before
// the header (log lines) are skipped.
std::map<std::string, std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    if (header.empty()) {
      if (line.rfind("run_id,", 0) == 0) header = csv_cells(line);
      continue;
    }
    auto cells = csv_cells(line);
    if (cells.size() != header.size()) continue;
    auto& row = out[cells[0]];
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
  }
  return out;
}

// The cell as a number; fails the check (and returns 0) when it is not one.
double number(const std::string& cell) {
  INFO("cell '" << cell << "'");
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(cell, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  CHECK(!cell.empty());
  CHECK(used == cell.size());
  return used == cell.size() ? v : 0;
}

}  // namespace

TEST_CASE("baseline, ddp on 2 ranks and dp on 2 replicas: the report over their folder has every run's figures",
          "[e2e]") {
  test::TempDir dir;
  auto results = dir.path / "results";
  const std::string common =
      " --max-steps 6 --synthetic-samples 64 --threads 1 --timing-warmup-steps 1 --max-seq-length 64"
      " --doc-stride 16 --results-dir " + results.string();
  struct Run {
    std::string name, args;
  } runs[] = {
      {"base", "--strategy baseline --batch-size 8"},
      {"ddp2", "--strategy ddp --nproc-per-node 2 --batch-size 4"},
      {"dp2", "--strategy dp --dp-replicas 2 --batch-size 4"},
      // Global batch 12: measures other work than the baseline's 8.
      {"dp2-b6", "--strategy dp --dp-replicas 2 --batch-size 6"},
  };
  for (auto& run : runs) {
    auto r = test::run_command(bin() + " run " + run.args + " --run-name " + run.name + common);
    INFO(run.name << ":\n" << r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::exists(results / run.name / "run.json"));
  }

  auto out = dir.path / "report";
  auto r = test::run_command(bin() + " report " + results.string() + " --format csv --no-plots --out " +
                             out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto rows = csv_rows(r.output);
  REQUIRE(rows.size() == 4);
  const std::map<std::string, std::string> devices = {
      {"base", "1"}, {"ddp2", "2"}, {"dp2", "2"}, {"dp2-b6", "2"}};
  const std::map<std::string, std::string> strategy = {
      {"base", "baseline"}, {"ddp2", "ddp"}, {"dp2", "dp"}, {"dp2-b6", "dp"}};
  for (auto& [id, row] : rows) {
    INFO("run " << id);
    REQUIRE(devices.count(id) == 1);
    CHECK(row["strategy"] == strategy.at(id));
    CHECK(row["devices"] == devices.at(id));
    CHECK(row["status"] == "ok");
    CHECK(row["baseline_run_id"] == "base");
    CHECK(number(row["samples_per_s"]) > 0);
    CHECK(number(row["samples_per_s_per_device"]) > 0);
    // Weak scaling compares the work of one device (4 per device vs the
    // baseline's 8 is not the same work either).
    if (id == "base") CHECK(number(row["weak_scaling_efficiency"]) == Approx(1.0));
  }
  for (const char* id : {"base", "ddp2", "dp2"}) {
    INFO("run " << id);
    auto& row = rows[id];
    CHECK(row["global_batch"] == "8");
    CHECK(row["not_comparable"].empty());
    double speedup = number(row["speedup"]);
    double efficiency = number(row["efficiency"]);
    CHECK(speedup > 0);
    CHECK(efficiency > 0);
    // Efficiency is the speedup per device relative to the baseline's one.
    CHECK(efficiency == Approx(speedup / std::stod(devices.at(id))).epsilon(1e-3));
  }
  CHECK(number(rows["base"]["speedup"]) == Approx(1.0));
  CHECK(number(rows["base"]["efficiency"]) == Approx(1.0));

  auto& odd = rows["dp2-b6"];
  CHECK(odd["global_batch"] == "12");
  CHECK(odd["speedup"] == "n/c");
  CHECK(odd["efficiency"] == "n/c");
  CHECK(odd["not_comparable"] == "global batch 12 vs baseline 8");

  // What was printed is also what was written, and report.md holds every run.
  REQUIRE(fs::exists(out / "report.csv"));
  REQUIRE(fs::exists(out / "report.md"));
  CHECK(csv_rows(read_file(out / "report.csv")) == rows);
  auto md = read_file(out / "report.md");
  INFO(md);
  for (const char* id : {"base", "ddp2", "dp2", "dp2-b6"}) CHECK(md.find(std::string("| ") + id + " ") != std::string::npos);
  CHECK(md.find("global batch 12 vs baseline 8") != std::string::npos);

  // The terminal table says why the odd run has no speedup.
  auto text = test::run_command(bin() + " report " + results.string());
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(text.output.find("baseline: base (baseline, 1 device, cpu") != std::string::npos);
  CHECK(text.output.find("dp2-b6: no speedup against baseline base: global batch 12 vs baseline 8") !=
        std::string::npos);
}
