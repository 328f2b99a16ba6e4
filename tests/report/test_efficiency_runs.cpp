// Where the efficiency went, on real runs through the binary (CPU ranks over
// Gloo, bert-tiny, a few steps): the parts add up for every strategy, and
// moving one cause on purpose moves its part and, within generous bounds,
// nothing else. This machine is shared and noisy: every check is on which
// part moved most or on a sign, never on a time against a constant.
#include "test_catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "report/compare.h"
#include "report/efficiency.h"
#include "report/result_reader.h"
#include "test_env.h"

using namespace hpcbench;
using report::Part;
namespace fs = std::filesystem;

namespace {

// One short run into `results`.
void run(const fs::path& results, const std::string& name, const std::string& args, const std::string& env = "") {
  auto cmd = fmt::format(
      "{} '{}' run --model bert-tiny --train-data synthetic --synthetic-samples 512 --max-seq-length 64 "
      "--max-steps 10 --timing-warmup-steps 3 --threads 1 --log-every 100 --collective-timeout 60 --sample-ms 0 "
      "--results-dir '{}' --run-name {} {}",
      env, test::hpcbench_bin().string(), results.string(), name, args);
  auto r = test::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
}

std::vector<report::EfficiencyRow> decompose(const fs::path& results) {
  auto loaded = report::read_results({results});
  std::vector<report::RunResult> runs;
  for (auto& r : loaded.runs) runs.push_back(r.result);
  auto b = report::choose_baseline(runs, "auto");
  REQUIRE(b);
  return report::efficiency_rows(report::compare(loaded.runs, runs[*b]));
}

const report::EfficiencyRow& row(const std::vector<report::EfficiencyRow>& rows, const std::string& name) {
  for (auto& r : rows)
    if (r.name == name) return r;
  FAIL("no efficiency row " << name);
  throw;
}

double part(const report::EfficiencyRow& r, Part p) { return r.d.ms[size_t(p)]; }

std::string describe(const report::EfficiencyRow& r) {
  std::string s = fmt::format("{}: step {:.2f} ideal {:.2f}", r.name, r.d.measured_ms, r.d.ideal_ms);
  for (size_t p = 0; p < report::kParts; ++p) s += fmt::format(", {} {:.2f}", report::part_key(Part(p)), r.d.ms[p]);
  return s;
}

// The part that grew most from `a` to `b`, and by how much each grew.
std::pair<Part, std::array<double, report::kParts>> growth(const report::EfficiencyRow& a,
                                                           const report::EfficiencyRow& b) {
  std::array<double, report::kParts> g{};
  size_t most = 0;
  for (size_t p = 0; p < report::kParts; ++p) {
    g[p] = b.d.ms[p] - a.d.ms[p];
    if (g[p] > g[most]) most = p;
  }
  return {Part(most), g};
}

const char* kBaseline = "--strategy baseline --batch-size 16";
const char* kTwo = "--nproc-per-node 2 --batch-size 8";

}  // namespace

TEST_CASE("the parts add up to the measured step for every strategy") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  run(results, "baseline", kBaseline);
  run(results, "dp", "--strategy dp --dp-replicas 2 --batch-size 8");
  run(results, "ddp", fmt::format("--strategy ddp {}", kTwo));
  run(results, "fsdp", fmt::format("--strategy fsdp {}", kTwo));
  run(results, "zero2", fmt::format("--strategy zero --zero-stage 2 {}", kTwo));
  run(results, "zero3", fmt::format("--strategy zero --zero-stage 3 {}", kTwo));
  auto rows = decompose(results);
  REQUIRE(rows.size() == 5);
  for (auto& r : rows) {
    INFO(describe(r));
    CHECK(r.d.exact);
    double sum = 0;
    for (double v : r.d.ms) sum += v;
    CHECK(sum == Approx(r.d.measured_ms - r.d.ideal_ms).margin(1e-6 * r.d.measured_ms));
    // One run per row: the median throughput is the run's, and the phases
    // and their exposed parts partition its steps.
    CHECK(std::abs(part(r, Part::Unexplained)) < 0.01 * r.d.measured_ms);
    CHECK(part(r, Part::Exposed) >= 0);
    CHECK(part(r, Part::Waiting) >= -0.01 * r.d.measured_ms);
    // The measured step is the job's mean step, as the throughput says.
    CHECK(r.d.measured_ms > r.d.ideal_ms * 0.2);
  }
  // The per-rank figures the parts come from: phases add up to each rank's
  // step, the exposed parts per phase to its exposed communication.
  for (const char* name : {"ddp", "fsdp", "zero2", "zero3"}) {
    std::ifstream in(results / name / "run.json");
    auto j = nlohmann::json::parse(in);
    REQUIRE(j["rank_timing_ms"].size() == 2);
    for (auto& rank : j["rank_timing_ms"]) {
      INFO(name << " " << rank.dump());
      double phases = 0, exposed = 0;
      for (const char* p : {"data", "forward", "backward", "grad_sync", "optimizer"}) {
        phases += rank[fmt::format("{}_ms", p)].get<double>();
        exposed += rank[fmt::format("{}_exposed_ms", p)].get<double>();
      }
      CHECK(phases == Approx(rank["step_ms"].get<double>()).epsilon(1e-9));
      CHECK(exposed == Approx(rank["comm_exposed_ms"].get<double>()).epsilon(0.02).margin(0.05));
      CHECK(rank["comm_exposed_ms"].get<double>() > 0);
    }
  }
}

TEST_CASE("ddp without overlap: the exposed communication grows by the step's growth") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  run(results, "baseline", kBaseline);
  run(results, "ddp", fmt::format("--strategy ddp {}", kTwo));
  run(results, "ddp-serial", fmt::format("--strategy ddp --no-overlap {}", kTwo));
  auto rows = decompose(results);
  auto& a = row(rows, "ddp");
  auto& b = row(rows, "ddp-serial");
  INFO(describe(a) << "\n" << describe(b));
  auto [most, g] = growth(a, b);
  CHECK(most == Part::Exposed);
  CHECK(g[size_t(Part::Exposed)] > 0);
}

TEST_CASE("zero-3 without prefetch: the exposed communication grows most") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  run(results, "baseline", kBaseline);
  run(results, "zero3", fmt::format("--strategy zero --zero-stage 3 {}", kTwo));
  run(results, "zero3-noprefetch", fmt::format("--strategy zero --zero-stage 3 --no-prefetch {}", kTwo));
  auto rows = decompose(results);
  auto& a = row(rows, "zero3");
  auto& b = row(rows, "zero3-noprefetch");
  INFO(describe(a) << "\n" << describe(b));
  auto [most, g] = growth(a, b);
  CHECK(most == Part::Exposed);
  CHECK(g[size_t(Part::Exposed)] > 0);
}

TEST_CASE("a rank slowed on purpose shows up as waiting for the slowest rank") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  const double slow_ms = 40;
  run(results, "baseline", kBaseline);
  run(results, "ddp", fmt::format("--strategy ddp {}", kTwo));
  run(results, "ddp-slow", fmt::format("--strategy ddp {}", kTwo), fmt::format("HPCBENCH_TEST_SLOW_RANK=1:{}", slow_ms));
  auto rows = decompose(results);
  auto& a = row(rows, "ddp");
  auto& b = row(rows, "ddp-slow");
  INFO(describe(a) << "\n" << describe(b));
  auto [most, g] = growth(a, b);
  CHECK(most == Part::Waiting);
  // The sleep, give or take the machine's noise; and not compute on the
  // rank that did not sleep.
  CHECK(g[size_t(Part::Waiting)] > 0.5 * slow_ms);
  CHECK(g[size_t(Part::Waiting)] < 2 * slow_ms);
  CHECK(std::abs(g[size_t(Part::Compute)]) < 0.5 * slow_ms);
  CHECK(std::abs(g[size_t(Part::Exposed)]) < 0.5 * slow_ms);
}

TEST_CASE("a smaller per-device batch shows up as compute inflation") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  run(results, "baseline", kBaseline);
  run(results, "ddp", fmt::format("--strategy ddp {}", kTwo));
  // The same global batch in micro-batches of 1: forward and backward pay
  // their per-call cost 8 times a step instead of once.
  run(results, "ddp-small", "--strategy ddp --nproc-per-node 2 --batch-size 1 --grad-accum 8");
  auto rows = decompose(results);
  auto& a = row(rows, "ddp");
  auto& b = row(rows, "ddp-small");
  INFO(describe(a) << "\n" << describe(b));
  auto [most, g] = growth(a, b);
  CHECK(most == Part::Compute);
  CHECK(g[size_t(Part::Compute)] > 0);
}

namespace {

// "row part measured predicted error" lines of the predicted-parts table.
struct PartLine {
  double measured = 0, predicted = 0, error = 0;
};
std::map<std::string, PartLine> predicted_lines(const std::string& output, const std::string& row) {
  std::map<std::string, PartLine> out;
  auto at = output.find("where the efficiency went, predicted beside measured");
  REQUIRE(at != std::string::npos);
  std::istringstream in(output.substr(at));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(row + " ", 0) != 0) continue;
    std::istringstream f(line.substr(row.size()));
    std::vector<std::string> words;
    for (std::string w; f >> w;) words.push_back(w);
    if (words.size() < 4 || words[0] == "largest") continue;
    std::string name;
    for (size_t i = 0; i + 3 < words.size(); ++i) name += (name.empty() ? "" : " ") + words[i];
    out[name] = {std::stod(words[words.size() - 3]), std::stod(words[words.size() - 2]),
                 std::stod(words[words.size() - 1])};
  }
  return out;
}

}  // namespace

TEST_CASE("report --comm: the predicted parts beside the measured ones, with the error per part") {
  test::TempDir dir;
  auto results = dir.path / "runs";
  run(results, "baseline", kBaseline);
  run(results, "ddp", fmt::format("--strategy ddp {}", kTwo));
  run(results, "ddp-serial", fmt::format("--strategy ddp --no-overlap {}", kTwo));
  // This machine's own Gloo collectives as the model's network.
  auto net = dir.path / "gloo.txt";
  auto bench = test::run_command(fmt::format("'{}' bench-comm --nproc-per-node 2 --min-bytes 1K --max-bytes 4M "
                                             "--iters 5 --warmup-iters 2 --output '{}'",
                                             test::hpcbench_bin().string(), net.string()));
  INFO(bench.output);
  REQUIRE(bench.exit_code == 0);
  auto c = test::run_command(
      fmt::format("'{}' report '{}' --comm '{}'", test::hpcbench_bin().string(), results.string(), net.string()));
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  auto a = predicted_lines(c.output, "ddp"), b = predicted_lines(c.output, "ddp-serial");
  for (auto* lines : {&a, &b}) {
    for (size_t p = 0; p < report::kParts; ++p) {
      INFO(report::part_name(Part(p)));
      REQUIRE(lines->count(report::part_name(Part(p))));
      auto& l = lines->at(report::part_name(Part(p)));
      CHECK(l.error == Approx(l.predicted - l.measured).margin(0.011));
    }
    // The model has no slow rank, and compute linear in the batch.
    CHECK(lines->at("waiting for the slowest rank").predicted == 0);
    CHECK(lines->at("compute inflation").predicted == Approx(0).margin(0.011));
    CHECK(lines->at("ideal (baseline / devices)").error == Approx(0).margin(0.011));
  }
  // The model moves the same part as the measurement when overlap goes.
  CHECK(b.at("exposed communication").predicted > a.at("exposed communication").predicted);
  CHECK(b.at("exposed communication").measured > a.at("exposed communication").measured);
  CHECK(b.at("optimizer and other").predicted == Approx(a.at("optimizer and other").predicted).margin(0.011));
}
