// Where the efficiency went, on real runs through the binary (CPU ranks over
// Gloo, bert-tiny, a few steps): the parts add up for every strategy, and
// moving one cause on purpose moves its part and, within generous bounds,
// nothing else. This machine is shared and noisy: every check is on which
// part moved most or on a sign, never on a time against a constant.
#include "test_catch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "report/compare.h"
#include "report/efficiency.h"
#include "results/run_reader.h"
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

// The rows of the runs under `paths` against the baseline among them.
std::vector<report::EfficiencyRow> decompose(const std::vector<fs::path>& paths) {
  auto loaded = results::read_results(paths);
  std::vector<results::RunResult> runs;
  for (auto& r : loaded.runs) runs.push_back(r.result);
  auto b = report::choose_baseline(runs, "auto");
  REQUIRE(b);
  return report::efficiency_rows(report::compare(loaded.runs, runs[*b]));
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

// Runs `a` and `b` (flags, env) alternately `n` times each, each in a folder
// of its own (repeats of one configuration would otherwise be one row), and
// returns each part's median over the repeats, per side. Alternating spreads
// the machine's load changes over both sides.
struct Side {
  std::string flags, env;
};
// The reference rank's communication time (comm_ms) of a run.
double reference_comm_ms(const fs::path& run_json, size_t rank) {
  std::ifstream in(run_json);
  return nlohmann::json::parse(in)["rank_timing_ms"].at(rank)["comm_ms"].get<double>();
}

// Each side's median parts, and the median of its repeats' reference-rank
// comm_ms.
struct Paired {
  report::EfficiencyRow a, b;
  double comm_a = 0, comm_b = 0;
};
Paired paired(const fs::path& dir, const Side& a, const Side& b, int n) {
  run(dir / "base", "baseline", kBaseline);
  std::vector<report::EfficiencyRow> ra, rb;
  std::vector<double> ca, cb;
  for (int i = 0; i < n; ++i) {
    auto fa = dir / fmt::format("a{}", i), fb = dir / fmt::format("b{}", i);
    run(fa, "a", a.flags, a.env);
    run(fb, "b", b.flags, b.env);
    ra.push_back(decompose({dir / "base", fa}).at(0));
    rb.push_back(decompose({dir / "base", fb}).at(0));
    ca.push_back(reference_comm_ms(fa / "a" / "run.json", ra.back().d.reference_rank));
    cb.push_back(reference_comm_ms(fb / "b" / "run.json", rb.back().d.reference_rank));
  }
  std::sort(ca.begin(), ca.end());
  std::sort(cb.begin(), cb.end());
  auto median_of = [](std::vector<report::EfficiencyRow> rows) {
    report::EfficiencyRow m = rows.at(0);
    auto med = [&](auto get) {
      std::vector<double> v;
      for (auto& r : rows) v.push_back(get(r));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    m.d.measured_ms = med([](auto& r) { return r.d.measured_ms; });
    m.d.ideal_ms = med([](auto& r) { return r.d.ideal_ms; });
    for (size_t p = 0; p < report::kParts; ++p) m.d.ms[p] = med([&](auto& r) { return r.d.ms[p]; });
    return m;
  };
  return {median_of(ra), median_of(rb), ca[ca.size() / 2], cb[cb.size() / 2]};
}
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
  auto rows = decompose({results});
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

// `b` is `a` with less overlapped. When `b` overlaps nothing, computation waited for
// all of its communication, and the decomposition must put that time in the
// exposed part (or, where a rank arrived late, in waiting), not in compute or
// the optimizer. Where `a`'s overlap hid a fifth of its communication or more
// and the step grew by 10 % or more, the exposed part and waiting together
// must take that growth (half to twice the step's growth): which of the two
// takes it, and how much compute grows beside it, moves with the other
// jobs' load between the two runs. Overlap
// hides communication only when a core is free to run it: on this shared
// 2-core machine under other jobs' load it often hides nothing, and then a
// step's growth is the load's, which no part can be asked to take; the test
// says so rather than guess.
void check_exposed_takes_the_growth(const Paired& p, bool b_overlaps_nothing) {
  const auto &a = p.a, &b = p.b;
  INFO(describe(a) << " comm " << p.comm_a << "\n" << describe(b) << " comm " << p.comm_b);
  if (b_overlaps_nothing) CHECK(part(b, Part::Exposed) + part(b, Part::Waiting) >= 0.8 * p.comm_b);
  const double hidden = p.comm_a - part(a, Part::Exposed) - part(a, Part::Waiting);
  const double dstep = b.d.measured_ms - a.d.measured_ms;
  if (hidden < 0.2 * p.comm_a || dstep < 0.1 * a.d.measured_ms) {
    WARN("overlap hid " << hidden << " of " << p.comm_a << " ms of communication and the step grew by " << dstep
                        << " ms: too little to attribute on this machine now");
    return;
  }
  const auto g = growth(a, b).second;
  const double communication = g[size_t(Part::Exposed)] + g[size_t(Part::Waiting)];
  CHECK(communication > 0.5 * dstep);
  CHECK(communication < 2 * dstep);
}

TEST_CASE("ddp without overlap: the exposed communication grows by the step's growth") {
  test::TempDir dir;
  check_exposed_takes_the_growth(paired(dir.path, {fmt::format("--strategy ddp {}", kTwo), ""},
                                        {fmt::format("--strategy ddp --no-overlap {}", kTwo), ""}, 3),
                                 true);
}

TEST_CASE("zero-3 without prefetch: the exposed communication grows by the step's growth") {
  test::TempDir dir;
  check_exposed_takes_the_growth(
      paired(dir.path, {fmt::format("--strategy zero --zero-stage 3 {}", kTwo), ""},
             {fmt::format("--strategy zero --zero-stage 3 --no-prefetch {}", kTwo), ""}, 3),
      false);
}

TEST_CASE("a rank slowed on purpose shows up as waiting for the slowest rank") {
  test::TempDir dir;
  // Larger than the step-to-step noise of a loaded 2-core machine.
  const double slow_ms = 200;
  auto [a, b, ca, cb] = paired(dir.path, {fmt::format("--strategy ddp {}", kTwo), ""},
                       {fmt::format("--strategy ddp {}", kTwo), fmt::format("HPCBENCH_INJECT=slow_rank=1:{}", slow_ms)},
                       1);
  INFO(describe(a) << "\n" << describe(b));
  auto [most, g] = growth(a, b);
  CHECK(most == Part::Waiting);
  // The sleep, give or take the machine's noise, and not the compute of the
  // rank that did not sleep.
  CHECK(g[size_t(Part::Waiting)] > 0.5 * slow_ms);
  CHECK(g[size_t(Part::Waiting)] < 2 * slow_ms);
  CHECK(g[size_t(Part::Compute)] < 0.5 * slow_ms);
}

TEST_CASE("a smaller per-device batch shows up as compute inflation") {
  test::TempDir dir;
  // The same global batch in micro-batches of 1: forward and backward pay
  // their per-call cost 8 times a step instead of once. Three pairs: under
  // other jobs' load one rank of a run can fall behind the other for a
  // while, which is waiting, and one pair can show more of it than of the
  // inflation.
  auto [a, b, ca, cb] = paired(dir.path, {fmt::format("--strategy ddp {}", kTwo), ""},
                       {"--strategy ddp --nproc-per-node 2 --batch-size 1 --grad-accum 8", ""}, 3);
  INFO(describe(a) << "\n" << describe(b));
  auto g = growth(a, b).second;
  // Waiting for the slowest rank grows too when other jobs load the machine (eight
  // micro-steps a step give a lagging rank eight chances; under load it once outgrew the
  // inflation, 23 ms against 22), and the slowed-rank experiment above attributes it. What
  // this one claims is that the rest of the growth, the smaller batch's own cost, is
  // compute inflation: a decomposition that put it in exposed communication or the
  // optimizer fails here.
  const double moved = b.d.measured_ms - a.d.measured_ms - g[size_t(Part::Waiting)];
  CHECK(g[size_t(Part::Compute)] > 0);
  CHECK(g[size_t(Part::Compute)] > 0.5 * moved);
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
  // Without overlap the model's step grows in its exposed part alone (the
  // measured side of this move is the test above: on a loaded machine one
  // pair of runs cannot show it).
  CHECK(b.at("exposed communication").predicted > a.at("exposed communication").predicted);
  CHECK(b.at("step").predicted - a.at("step").predicted ==
        Approx(b.at("exposed communication").predicted - a.at("exposed communication").predicted).margin(0.03));
  CHECK(b.at("optimizer and other").predicted == Approx(a.at("optimizer and other").predicted).margin(0.011));
}
