// Repeats end to end: `hpcbench run --repeats 3` of the baseline and of ddp
// on two local ranks, then `hpcbench report` over the folder: one row per
// configuration, a speedup interval that holds the point estimate, a
// significance verdict, and a noise warning that names the disturbed repeat.
// The disturbance is written into the second ddp repeat's run.json (its
// throughput set to 0.4x the first's, the third's to 1.01x): which repeat is
// the outlier is then known by construction, whatever the machine's load did
// to the real runs (a busy neighbour beside the second repeat, as before,
// could be outdone by other jobs' load on another repeat).
#include "test_catch.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/atomic_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

// Sets a run's throughput in its run.json (and the per-device figure with
// it), the one figure the repeat outlier check reads.
void set_throughput(const fs::path& run_json, double samples_per_s) {
  nlohmann::json j;
  {
    std::ifstream in(run_json);
    j = nlohmann::json::parse(in);
  }
  auto& r = j.at("result");
  r["samples_per_s"] = samples_per_s;
  r["samples_per_s_per_device"] = samples_per_s / r.at("world_size").get<double>();
  std::ofstream(run_json) << j.dump(2);
}

double throughput(const fs::path& run_json) {
  std::ifstream in(run_json);
  return nlohmann::json::parse(in).at("result").at("samples_per_s").get<double>();
}

std::map<std::string, std::string> csv_row_of(const std::string& csv, const std::string& strategy) {
  std::istringstream in(csv);
  std::string line;
  auto split = [](const std::string& l) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) out.emplace_back();
      else out.back() += c;
    }
    return out;
  };
  std::getline(in, line);
  auto header = split(line);
  while (std::getline(in, line)) {
    auto cells = split(line);
    if (cells.size() != header.size() || cells[1] != strategy) continue;
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    return row;
  }
  return {};
}

}  // namespace

TEST_CASE("three repeats of baseline and ddp: intervals, a verdict, and a warning on the disturbed repeat",
          "[e2e]") {
  test::TempDir dir;
  auto results = dir.path / "results";
  const std::string bin = test::hpcbench_bin().string();
  const std::string common =
      " --repeats 3 --max-steps 8 --timing-warmup-steps 2 --synthetic-samples 256 --max-seq-length 64"
      " --threads 1 --log-every 100 --results-dir " + results.string();
  auto base = test::run_command(bin + " run --strategy baseline --batch-size 8 --run-name base" + common);
  INFO(base.output);
  REQUIRE(base.exit_code == 0);
  for (const char* r : {"base-r1", "base-r2", "base-r3"}) REQUIRE(fs::exists(results / r / "run.json"));

  auto ddp = test::run_command(bin + " run --strategy ddp --nproc-per-node 2 --batch-size 4 --run-name ddp" + common);
  INFO(ddp.output);
  REQUIRE(ddp.exit_code == 0);
  for (const char* r : {"ddp-r1", "ddp-r2", "ddp-r3"}) REQUIRE(fs::exists(results / r / "run.json"));
  auto run_json = test::slurp(results / "ddp-r2" / "run.json");
  CHECK(run_json.find("\"repeat_group\": \"ddp\"") != std::string::npos);
  CHECK(run_json.find("\"repeat_index\": 2") != std::string::npos);
  // The disturbance: repeat 2 at 0.4x repeat 1, repeat 3 at 1.01x. Median
  // x, MAD 0.01x: repeat 2 stands 40 scaled MADs out, repeat 3 under one.
  const double x = throughput(results / "ddp-r1" / "run.json");
  REQUIRE(x > 0);
  set_throughput(results / "ddp-r2" / "run.json", 0.4 * x);
  set_throughput(results / "ddp-r3" / "run.json", 1.01 * x);

  auto out = dir.path / "report";
  auto rep = test::run_command(bin + " report " + results.string() + " --no-plots --out " + out.string());
  INFO(rep.output);
  REQUIRE(rep.exit_code == 0);
  auto csv = test::slurp(out / "report.csv");
  auto row = csv_row_of(csv, "ddp");
  REQUIRE(!row.empty());
  CHECK(row["runs"] == "3");
  CHECK(csv_row_of(csv, "baseline")["runs"] == "3");
  double s = std::stod(row["speedup"]), lo = std::stod(row["speedup_lo"]), hi = std::stod(row["speedup_hi"]);
  CHECK(lo <= s);
  CHECK(s <= hi);
  CHECK(lo < hi);
  // The table shows the interval and the verdict says whether ddp and the
  // baseline differ at 5 %.
  CHECK(rep.output.find("devices") != std::string::npos);
  CHECK(rep.output.find("significance: ") != std::string::npos);
  // On the terminal a pair that differs is ranked (`>`), the others are
  // counted as not differing at 5 %; report.md has every pair's verdict.
  bool verdict = std::regex_search(rep.output, std::regex("significance: [^\n]* > ")) ||
                 rep.output.find("do not differ significantly at 5 %") != std::string::npos;
  CHECK(verdict);
  // The terminal condenses the noise warnings to a line per row; report.md names each.
  CHECK(rep.output.find("warning: noise in ddp: ") != std::string::npos);
  auto md = test::slurp(out / "report.md");
  // The repeat named as disturbed is the one made so, and no other ddp
  // repeat (step-time warnings of any repeat may come with the machine's load).
  CHECK(md.find("- ddp-r2: throughput") != std::string::npos);
  CHECK(md.find("- ddp-r1: throughput") == std::string::npos);
  CHECK(md.find("- ddp-r3: throughput") == std::string::npos);
  CHECK(md.find("95 % bootstrap interval") != std::string::npos);
}

TEST_CASE("--help shows numeric settings with their type") {
  auto r = test::run_command(test::hpcbench_bin().string() + " run --help");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("--batch-size INT ") != std::string::npos);
  CHECK(r.output.find("--lr FLOAT ") != std::string::npos);
  CHECK(r.output.find("--run-name TEXT ") != std::string::npos);
  CHECK(r.output.find("--repeats INT=1 ") != std::string::npos);
  CHECK(r.output.find("--repeat-group") == std::string::npos);  // set by --repeats only
}

TEST_CASE("--repeats refuses zero, naming the flag") {
  auto r = test::run_command(test::hpcbench_bin().string() + " run --repeats 0 --max-steps 2");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--repeats 0: must be at least 1") != std::string::npos);
}
