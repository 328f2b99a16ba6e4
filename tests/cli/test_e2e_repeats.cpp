// Repeats end to end: `hpcbench run --repeats 3` of the baseline and of ddp
// on two local ranks, with a busy loop beside the second ddp repeat, then
// `hpcbench report` over the folder: one row per configuration, a speedup
// interval that holds the point estimate, a significance verdict, and a
// noise warning that names the disturbed repeat.
#include "test_catch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "core/atomic_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

// A neighbour that computes in bursts (busy 20-150 ms, idle 20-150 ms), so
// that the steps beside it are slowed unevenly, as by a shared node's jobs.
pid_t start_neighbour(unsigned seed) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ms(20, 150);
  volatile double x = 1;
  for (;;) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms(rng));
    while (std::chrono::steady_clock::now() < until) x = x * 1.0000001 + 1e-9;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms(rng)));
  }
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
      " --repeats 3 --max-steps 15 --timing-warmup-steps 3 --synthetic-samples 256 --max-seq-length 64"
      " --threads 1 --log-every 100 --results-dir " + results.string();
  auto base = test::run_command(bin + " run --strategy baseline --batch-size 8 --run-name base" + common);
  INFO(base.output);
  REQUIRE(base.exit_code == 0);
  for (const char* r : {"base-r1", "base-r2", "base-r3"}) REQUIRE(fs::exists(results / r / "run.json"));

  test::CommandResult ddp;
  std::thread runner([&] {
    ddp = test::run_command(bin + " run --strategy ddp --nproc-per-node 2 --batch-size 4 --run-name ddp" + common);
  });
  // The neighbours start when the first repeat's folder appears (the second
  // starts then) and stop when the second's does.
  std::vector<pid_t> neighbours;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!fs::exists(results / "ddp-r2") && std::chrono::steady_clock::now() < deadline) {
    if (neighbours.empty() && fs::exists(results / "ddp-r1"))
      for (unsigned i = 0; i < 3; ++i) neighbours.push_back(start_neighbour(i + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (pid_t p : neighbours) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  runner.join();
  INFO(ddp.output);
  REQUIRE(ddp.exit_code == 0);
  REQUIRE(neighbours.size() == 3);
  for (const char* r : {"ddp-r1", "ddp-r2", "ddp-r3"}) REQUIRE(fs::exists(results / r / "run.json"));
  auto run_json = test::slurp(results / "ddp-r2" / "run.json");
  CHECK(run_json.find("\"repeat_group\": \"ddp\"") != std::string::npos);
  CHECK(run_json.find("\"repeat_index\": 2") != std::string::npos);

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
  CHECK(md.find("- ddp-r2: ") != std::string::npos);
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
