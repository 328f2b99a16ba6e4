// `hpcbench run --profile` through the real binary on the CPU: the trace is
// valid JSON holding the profiled steps and their operators, the kernel
// table adds up to the steps' time that the trace itself says, and a range
// the run cannot profile is refused before its first step.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " run --model bert-tiny --device cpu --synthetic-samples 16 --max-seq-length 32 --doc-stride 8"
    " --max-query-length 16 --batch-size 4 --cache-dir none --sample-ms 0 --tensorboard off --log-every 1";

std::string bin() { return test::hpcbench_bin().string(); }

// kernel_table.csv's rows: name -> (calls, total ms); names hold no comma here.
std::map<std::string, std::pair<int64_t, double>> table_rows(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::pair<int64_t, double>> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string name, calls, total;
    std::getline(ss, name, ',');
    std::getline(ss, calls, ',');
    std::getline(ss, total, ',');
    rows[name] = {std::stoll(calls), std::stod(total)};
  }
  return rows;
}

}  // namespace

TEST_CASE("--profile 2-3 on the CPU: a Chrome trace of steps 2 and 3, and a table that adds up to them") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(bin() + kTiny + " --max-steps 4 --profile 2-3 --run-name p --results-dir " +
                             results.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto folder = results / "p";
  CHECK(r.output.find("profile of steps 2-3 (step 2: eager; step 3: eager)") != std::string::npos);
  CHECK(r.output.find("CPU operators (self time): 2 profiled step(s)") != std::string::npos);

  // The trace: Chrome's JSON format, the two steps under torch.profiler's
  // step names, operators inside them, nothing of steps 1 and 4.
  nlohmann::json trace;
  REQUIRE_NOTHROW(trace = nlohmann::json::parse(test::slurp(folder / "profile-rank0.pt.trace.json")));
  REQUIRE(trace.contains("traceEvents"));
  std::map<std::string, std::pair<double, double>> steps;  // name -> (ts, dur) in us
  std::map<std::string, int> ops;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") != "X") continue;
    if (name.rfind("ProfilerStep#", 0) == 0) steps[name] = {e["ts"].get<double>(), e["dur"].get<double>()};
    if (e.value("cat", "") == "cpu_op") ++ops[name];
  }
  REQUIRE(steps.size() == 2);
  CHECK(steps.count("ProfilerStep#2"));
  CHECK(steps.count("ProfilerStep#3"));
  CHECK(ops["aten::addmm"] + ops["aten::mm"] > 0);
  CHECK(ops["aten::native_layer_norm"] > 0);
  CHECK(ops["aten::native_layer_norm_backward"] > 0);

  // The table: every row, the idle one included, adds up to the two steps'
  // durations as the trace gives them (us, three decimals).
  auto rows = table_rows(folder / "kernel_table.csv");
  double total = 0;
  for (auto& [name, row] : rows) total += row.second;
  const double traced_ms = (steps["ProfilerStep#2"].second + steps["ProfilerStep#3"].second) / 1000.0;
  CHECK(total == Approx(traced_ms).margin(0.005));
  CHECK(rows.count("(outside any operator)"));
  CHECK(rows.count("aten::addmm"));
  CHECK(test::slurp(folder / "kernel_table.txt").find("CPU operators (self time)") != std::string::npos);

  auto run = nlohmann::json::parse(test::slurp(folder / "run.json"));
  REQUIRE(run.contains("profile"));
  const auto& p = run["profile"];
  CHECK(p["steps"] == "2-3");
  CHECK(p["profiled"].size() == 2);
  CHECK(p["profiled"][0]["step"] == 2);
  CHECK(p["profiled"][1]["what"] == "eager");
  CHECK(p["trace"] == "profile-rank0.pt.trace.json");
  CHECK(p["window_ms"].get<double>() == Approx(traced_ms).margin(0.005));
}

TEST_CASE("--profile under --cuda-graph on the CPU says the step ran the graph-ready step uncaptured") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(bin() + kTiny + " --max-steps 3 --cuda-graph --profile 3 --run-name g --results-dir " +
                             results.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto run = nlohmann::json::parse(test::slurp(results / "g" / "run.json"));
  const std::string what = run["profile"]["profiled"][0]["what"];
  CHECK(what.rfind("graph-ready step, eager (not captured:", 0) == 0);
}

TEST_CASE("--profile: a range the run cannot profile is refused before step 1, nothing written") {
  test::TempDir dir;
  auto results = dir.path / "results";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--max-steps 4 --profile 0", "--profile 0: use a step N or a range A-B"},
      {"--max-steps 4 --profile 3-2", "--profile 3-2: the range ends before it starts"},
      {"--max-steps 4 --profile two", "--profile two"},
      {"--max-steps 4 --profile 4-5", "--profile 4-5: the run has 4 optimizer step(s)"},
      // One epoch of 16 features in batches of 4: four steps, known once the data is read.
      {"--max-steps 0 --epochs 1 --profile 9", "--profile 9: the run has 4 optimizer step(s)"},
  };
  for (auto& c : cases) {
    INFO(c.args);
    auto r = test::run_command(bin() + kTiny + " --results-dir " + results.string() + " " + c.args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    CHECK(r.output.find("step      1/") == std::string::npos);
    CHECK(test::entries(results) == 0);
  }
}
