#include "test_catch.h"

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "report/noise.h"
#include "report/plot.h"
#include "report/report_tables.h"
#include "report_fixtures.h"
#include "test_env.h"

using namespace hpcbench;

namespace {

results::RunResult run(const std::string& id, double tp) {
  auto r = test::make_run(id, "ddp", 2, 8, tp, 256);
  r.timed_steps = 12;
  return r;
}

std::vector<std::string> warnings_for(std::vector<results::RunResult> rs, std::map<std::string, results::StepSeries> s) {
  std::vector<results::LoadedRun> loaded;
  for (auto& r : rs) loaded.push_back({r, "x/run.json"});
  std::vector<std::string> out;
  for (auto& w : report::noise_warnings(report::compare(loaded, std::nullopt), s)) out.push_back(w.text);
  return out;
}

results::StepSeries series(std::vector<double> ms) {
  results::StepSeries s;
  s.ms = std::move(ms);
  return s;
}

bool names(const std::vector<std::string>& ws, const std::string& run, const std::string& what) {
  for (auto& w : ws)
    if (w.starts_with(run + ":") && w.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("noise warnings name the run and the remedy") {
  // 3 warm-up steps then 12 timed ones.
  std::vector<double> steady = {50, 40, 30, 10, 10.2, 9.9, 10.1, 10, 9.8, 10.1, 10, 10.2, 9.9, 10, 10.1};
  SECTION("steady repeats: nothing") {
    CHECK(warnings_for({run("a", 100), run("b", 101), run("c", 99)},
                       {{"a", series(steady)}, {"b", series(steady)}, {"c", series(steady)}})
              .empty());
  }
  SECTION("a disturbed repeat: more than 3 MADs from its row's median") {
    auto ws = warnings_for({run("a", 100), run("b", 101), run("c", 60)}, {});
    CHECK(ws.size() == 1);
    CHECK(names(ws, "c", "MADs from the median 100.00 of its 3 repeats"));
    CHECK(names(ws, "c", "exclusive node"));
  }
  SECTION("step times varying within a run") {
    auto noisy = steady;
    for (size_t i = 3; i < noisy.size(); i += 2) noisy[i] *= 1.5;
    auto ws = warnings_for({run("a", 100)}, {{"a", series(noisy)}});
    CHECK(names(ws, "a", "coefficient of variation"));
    CHECK(names(ws, "a", "--max-steps"));
  }
  SECTION("the first timed step slow: warm-up too short") {
    auto slow = steady;
    slow[3] = 30;
    auto ws = warnings_for({run("a", 100)}, {{"a", series(slow)}});
    CHECK(names(ws, "a", "--timing-warmup-steps"));
  }
  SECTION("drifting step times") {
    std::vector<double> d = {50, 40, 30};
    for (int i = 0; i < 12; ++i) d.push_back(10 + 0.3 * i);
    auto ws = warnings_for({run("a", 100)}, {{"a", series(d)}});
    CHECK(names(ws, "a", "drift by +"));
  }
  SECTION("without a series: the CV from the result's own figures") {
    auto r = run("a", 100);
    r.step_ms_mean = 10;
    r.step_ms_stddev = 2;
    CHECK(names(warnings_for({r}, {}), "a", "vary by 20 %"));
  }
}

TEST_CASE("step series are read from the loss.csv beside the result") {
  test::TempDir dir;
  write_file_atomic(dir.path / "r/loss.csv", "step,epoch,loss,lr,ms\n1,0,5.5,0.001,12.5\n2,0,5.25,0.001,11\n");
  auto s = results::read_step_series(dir.path / "r/run.json");
  CHECK(s.ms == std::vector<double>{12.5, 11});
  CHECK(s.loss == std::vector<double>{5.5, 5.25});
  CHECK(s.step == std::vector<int64_t>{1, 2});
  CHECK(results::read_step_series(dir.path / "none/run.json").ms.empty());
  CHECK(report::timed({1, 2, 3, 4}, 2) == std::vector<double>{3, 4});
}

TEST_CASE("loss curves: the largest deviation from the baseline's curve, and the step plot data") {
  auto base = test::make_run("base", "baseline", 1, 8, 100, 256);
  auto ddp = test::make_run("ddp", "ddp", 2, 8, 180, 256);
  auto other = test::make_run("ddp-gb16", "ddp", 2, 16, 190, 256);  // other work: not compared
  std::vector<results::LoadedRun> loaded = {{base, "b/run.json"}, {ddp, "d/run.json"}, {other, "o/run.json"}};
  auto c = report::compare(loaded, base);
  results::StepSeries b, d, o;
  b.step = d.step = o.step = {1, 2, 3};
  b.loss = {6.0, 5.5, 5.0};
  d.loss = {6.0, 5.502, 4.999};
  o.loss = {6.0, 3.0, 1.0};
  b.ms = d.ms = o.ms = {30, 10, 10};
  auto lines = report::loss_deviation_lines(c, {{"base", b}, {"ddp", d}, {"ddp-gb16", o}});
  REQUIRE(lines.size() == 1);
  INFO(lines[0]);
  CHECK(lines[0].find("1 run(s)") != std::string::npos);
  CHECK(lines[0].find("largest deviation is 0.002 (ddp, step 2, where the baseline's loss is 5.5000: 0.036 % of it)") !=
        std::string::npos);
  CHECK(report::loss_deviation_lines(c, {}).empty());
  auto data = report::step_plot_data(c, {{"base", b}, {"ddp", d}});
  CHECK(data.find("# ddp\n# step loss ms\n1 6 30\n2 5.502 10\n3 4.999 10\n") != std::string::npos);
}

TEST_CASE("the terminal condenses noise warnings to one line per row; report.md keeps every one") {
  std::vector<double> steady = {50, 40, 30, 10, 10.2, 9.9, 10.1, 10, 9.8, 10.1, 10, 10.2, 9.9, 10, 10.1};
  auto spiky = steady, slow_first = steady, noisy = steady;
  spiky[8] = 31;  // step 9: 3.1x the median
  slow_first[3] = 30;
  for (size_t i = 3; i < noisy.size(); i += 2) noisy[i] *= 1.5;
  std::vector<results::LoadedRun> loaded;
  for (auto& [id, tp] : std::vector<std::pair<std::string, double>>{{"a", 100}, {"b", 101}, {"c", 60}}) {
    auto r = run(id, tp);
    r.repeat_group = "ddp-2x";
    r.steps = 15;
    loaded.push_back({r, "x/run.json"});
  }
  auto c = report::compare(loaded, std::nullopt);
  c.noise = report::noise_warnings(c, {{"a", series(spiky)}, {"b", series(slow_first)}, {"c", series(noisy)}});
  // a: an outlier step; b: a slow first step (itself an outlier step); c:
  // varying steps and a disturbed repeat.
  REQUIRE(c.noise.size() >= 4);
  bool named = false;
  // Timed steps 4..15, median 10.05: step 9 took 31 ms.
  for (auto& w : c.noise) named |= w.run == "a" && w.what == "1 outlier step: step 9 (3.08x the median)";
  CHECK(named);
  auto lines = report::noise_summary_lines(c.noise);
  REQUIRE(lines.size() == 2);  // one row, then what to do, once
  CHECK(lines[0].starts_with(fmt::format("noise in ddp-2x: {} warnings over 3 runs; the worst: ", c.noise.size())));
  // The worst is the one furthest past its threshold: c's throughput, 60
  // against a median of 100 with a scaled MAD of 1.48, is 27 MADs off, 9x
  // the 3 allowed; a's spike, 3.08x the median, is 2.6x the 1.2x allowed.
  CHECK(lines[0].find("the worst: c: throughput 60.00 seq/s is more than 3 MADs from the median 100.00") !=
        std::string::npos);
  CHECK(lines[1].find("--repeats") != std::string::npos);
  auto text = report::terminal_report(c, {});
  size_t warning_lines = 0;
  for (size_t at = 0; (at = text.find("warning: noise", at)) != std::string::npos; ++at) ++warning_lines;
  CHECK(warning_lines == 2);
  auto md = report::markdown_report(c, {}, {});
  for (auto& w : c.noise) CHECK(md.find("- " + w.text) != std::string::npos);
  CHECK(report::terminal_report(c, {}, true).find(c.noise.back().text) != std::string::npos);
}
