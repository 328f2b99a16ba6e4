#include "test_catch.h"

#include <fmt/format.h>

#include "report/compare.h"
#include "report/report_tables.h"
#include "stats/stats.h"
#include "report_fixtures.h"
#include "verdict_check.h"

using namespace hpcbench;
using test::make_run;

namespace {

// Three repeats each of baseline (1 device), ddp and zero at 2 devices whose
// throughputs overlap, dp clearly slower, and fsdp run once; all on CPU.
std::vector<results::LoadedRun> repeat_runs() {
  std::vector<results::RunResult> rs;
  auto add = [&](const std::string& group, const std::string& strategy, int64_t world, std::vector<double> tps) {
    for (size_t i = 0; i < tps.size(); ++i) {
      auto r = make_run(tps.size() > 1 ? fmt::format("{}-r{}", group, i + 1) : group, strategy, world, 8, tps[i], 256);
      r.device = "cpu";
      r.repeat_group = tps.size() > 1 ? group : "";
      r.repeat_index = tps.size() > 1 ? static_cast<int64_t>(i + 1) : 0;
      r.started_at = fmt::format("2025-01-01T00:0{}:{}0Z", world, i);
      rs.push_back(r);
    }
  };
  add("base", "baseline", 1, {104, 96, 100});
  add("ddp", "ddp", 2, {190, 170, 180});
  add("zero", "zero", 2, {178, 186, 182});
  add("dp", "dp", 2, {121, 122, 120});
  add("fsdp", "fsdp", 2, {150});
  std::vector<results::LoadedRun> out;
  for (auto& r : rs) out.push_back({r, "runs/" + r.run_id + "/run.json"});
  return out;
}

report::Comparison compare_repeats() {
  auto runs = repeat_runs();
  std::vector<results::RunResult> results;
  for (auto& r : runs) results.push_back(r.result);
  auto i = report::choose_baseline(results, "auto");
  REQUIRE(i);
  return report::compare(runs, results[*i]);
}

const report::ComparisonRow& row(const report::Comparison& c, const std::string& strategy) {
  for (auto& r : c.rows)
    if (r.run.strategy == strategy) return r;
  FAIL("no row of " << strategy);
  throw;
}

}  // namespace

TEST_CASE("repeats of a configuration form one row of medians with bootstrap intervals") {
  auto c = compare_repeats();
  REQUIRE(c.rows.size() == 5);
  REQUIRE(report::has_repeats(c));
  auto& ddp = row(c, "ddp");
  CHECK(ddp.repeats.size() == 3);
  CHECK(report::row_name(ddp) == "ddp");
  CHECK(ddp.run.run_id == "ddp-r3");  // the repeat of median throughput
  CHECK(ddp.run.samples_per_s == 180);
  CHECK(*ddp.speedup == Approx(1.8));
  // The intervals are the stats functions' (checked against numpy/scipy) on
  // the groups' throughputs.
  auto expected = stats::ratio_interval({190, 170, 180}, {104, 96, 100});
  REQUIRE(ddp.speedup_ci);
  CHECK(ddp.speedup_ci->lo == expected.lo);
  CHECK(ddp.speedup_ci->hi == expected.hi);
  CHECK(ddp.speedup_ci->contains(*ddp.speedup));
  CHECK(ddp.efficiency_ci->lo == Approx(expected.lo / 2));
  CHECK(ddp.throughput_ci->lo == stats::median_interval({190, 170, 180}).lo);
  auto& base = row(c, "baseline");
  CHECK(base.is_baseline);
  CHECK(base.run.samples_per_s == 100);
  CHECK_FALSE(base.speedup_ci);
  auto& fsdp = row(c, "fsdp");
  CHECK(fsdp.repeats.size() == 1);
  CHECK_FALSE(fsdp.speedup_ci->has_interval());
}

TEST_CASE("significance: overlapping strategies are not ranked, separated ones are") {
  auto c = compare_repeats();
  auto find = [&](const std::string& a, const std::string& b) -> const report::Verdict& {
    for (auto& v : c.verdicts)
      if (v.faster == a && v.slower == b) return v;
    FAIL("no verdict " << a << " vs " << b);
    throw;
  };
  auto& dz = find("zero", "ddp");  // medians 182 vs 180
  CHECK_FALSE(dz.significant);
  CHECK(dz.test.ratio.contains(1.0));
  auto& zd = find("ddp", "dp");
  CHECK(zd.significant);
  CHECK(zd.test.ratio.lo > 1);
  // The verdict is the test's, and the test is scipy's (tests/stats):
  // ttest_ind(log ddp, log dp, equal_var=False).pvalue.
  CHECK(zd.test.p == Approx(0.00564929284706548).epsilon(1e-9));
  CHECK(dz.test.p == Approx(0.7558581869113264).epsilon(1e-9));
  CHECK_FALSE(find("fsdp", "dp").significant);  // fsdp ran once: no verdict
  CHECK_FALSE(find("fsdp", "dp").test.defined);
  // Only neighbours in throughput order are ranked, and fsdp (one run)
  // cannot be: the chain stays unranked although ddp > dp holds pairwise.
  auto lines = report::ranking_lines(c);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "2 devices: zero ~ ddp ~ fsdp ~ dp");
}

TEST_CASE("the table: intervals, \"1 run\", devices on CPU, no empty columns") {
  auto c = compare_repeats();
  auto t = report::comparison_table(c);
  auto col = [&](const std::string& title) {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].title == title) return static_cast<int>(i);
    return -1;
  };
  CHECK(col("devices") >= 0);
  CHECK(col("GPUs") < 0);
  CHECK(col("runs") >= 0);
  CHECK(col("MFU") < 0);  // no run measured it
  CHECK(col("EM") < 0);
  auto& ddp_cells = t.rows[static_cast<size_t>(
      std::find_if(c.rows.begin(), c.rows.end(), [](auto& r) { return r.run.strategy == "ddp"; }) - c.rows.begin())];
  auto expected = stats::ratio_interval({190, 170, 180}, {104, 96, 100});
  CHECK(ddp_cells[static_cast<size_t>(col("speedup"))] ==
        fmt::format("1.80 [{:.2f}, {:.2f}]", expected.lo, expected.hi));
  auto text = report::terminal_report(c, {}, true);
  CHECK(text.find("150.00 (1 run)") != std::string::npos);
  CHECK(text.find("not significant at 5 %, not ranked") != std::string::npos);
  CHECK(text.find("ranking, 2 devices: zero ~ ddp ~ fsdp ~ dp") != std::string::npos);
  // The terminal's default: the ranking, the significant pairs (ddp over
  // dp among them) and how many are left to --wide and report.md.
  auto narrow = report::terminal_report(c, {});
  CHECK(narrow.find("150.00 (1 run)") != std::string::npos);
  CHECK(narrow.find("not significant at 5 %") == std::string::npos);
  CHECK(narrow.find("significance: ranking, 2 devices: zero ~ ddp ~ fsdp ~ dp") != std::string::npos);
  CHECK(narrow.find("significance: 2 devices: ddp > dp (Welch's t-test p = 0.0056), ") != std::string::npos);
  // ddp against the baseline: scipy's p 0.000220, printed as a bound, with
  // one relation ("p = < 0.001" before).
  CHECK(narrow.find("ddp (2 devices) > base (1 device) (Welch's t-test p < 0.001),") != std::string::npos);
  CHECK(text.find("p = <") == std::string::npos);
  CHECK(narrow.find("p = <") == std::string::npos);
  size_t significant = 0;
  for (auto& v : c.verdicts) significant += v.significant;
  REQUIRE(significant > 0);
  REQUIRE(significant < c.verdicts.size());
  size_t lines = 0;
  for (size_t at = 0; (at = narrow.find("\nsignificance: ", at)) != std::string::npos; ++at) ++lines;
  CHECK(lines == report::ranking_lines(c).size() + significant + 1);
  CHECK(narrow.find(fmt::format("significance: {} of {} pairs do not differ significantly",
                                c.verdicts.size() - significant, c.verdicts.size())) != std::string::npos);
}

TEST_CASE("columns with figures appear: MFU, exposed comm, EM/F1") {
  auto runs = repeat_runs();
  for (auto& r : runs) {
    r.result.mfu = 0.25;
    r.result.comm_ms = 2;
    r.result.comm_exposed_ms = 0.5;
    r.result.exact_match = 10;
    r.result.f1 = 20;
  }
  auto c = report::compare(runs, runs[0].result);
  auto t = report::comparison_table(c);
  std::vector<std::string> titles;
  for (auto& col : t.columns) titles.push_back(col.title);
  for (auto* want : {"MFU", "comm", "exposed comm", "EM", "F1"})
    CHECK(std::find(titles.begin(), titles.end(), want) != titles.end());
  CHECK(std::find(titles.begin(), titles.end(), "eval") == titles.end());
}

TEST_CASE("two runs a side: the test decides, one run cannot") {
  auto runs = repeat_runs();
  std::vector<results::LoadedRun> two;
  for (auto& r : runs)
    if (r.result.repeat_index != 3) two.push_back(r);  // ddp, zero, dp, base: 2 each; fsdp: 1
  auto c = report::compare(two, two[0].result);
  bool found = false;
  for (auto& v : c.verdicts)
    if (v.faster == "ddp" && v.slower == "dp") {
      found = true;
      // {190, 170} against {121, 122}: 1.5x apart, but two runs give Welch's
      // t one degree of freedom; scipy says p = 0.0883.
      CHECK(v.test.defined);
      CHECK(v.test.p == Approx(0.08834655849574059).epsilon(1e-9));
      CHECK(v.test.ratio.contains(1.0));
      CHECK_FALSE(v.significant);
    }
  CHECK(found);
  auto text = report::terminal_report(c, {}, true);
  CHECK(text.find("Welch's t-test p = 0.088: not significant at 5 %") != std::string::npos);
  CHECK(text.find("1 run on a side cannot show 5 % with Welch's t-test (no spread to test against): --repeats 5") !=
        std::string::npos);
}

namespace {

void check_no_contradiction(const report::Comparison& c) {
  for (auto& text : {report::terminal_report(c, {}), report::terminal_report(c, {}, true),
                     report::markdown_report(c, {}, {})}) {
    auto bad = test::verdict_contradictions(text);
    for (auto& b : bad) UNSCOPED_INFO(b);
    CHECK(bad.empty());
  }
  std::string tb;
  for (auto& line : report::significance_lines(c)) tb += line + "\n";  // the TensorBoard text's lines
  CHECK(test::verdict_contradictions(tb).empty());
  auto bad = test::csv_verdict_contradictions(report::csv_report(c));
  for (auto& b : bad) UNSCOPED_INFO(b);
  CHECK(bad.empty());
}

}  // namespace

TEST_CASE("no line calls a pair significant at 5 % while printing a p-value above 0.05") {
  SECTION("three repeats") { check_no_contradiction(compare_repeats()); }
  SECTION("two repeats, and one run") {
    auto runs = repeat_runs();
    std::vector<results::LoadedRun> two;
    for (auto& r : runs)
      if (r.result.repeat_index != 3) two.push_back(r);
    check_no_contradiction(report::compare(two, two[0].result));
  }
  SECTION("the report fixtures") {
    auto runs = test::fixture_runs();
    std::vector<results::RunResult> results;
    for (auto& r : runs) results.push_back(r.result);
    check_no_contradiction(report::compare(runs, results[*report::choose_baseline(results, "auto")]));
  }
  SECTION("the checker itself catches the old contradiction") {
    CHECK_FALSE(test::verdict_contradictions("- 2 devices: a / b = 1.4x [1.2, 1.8], Welch's t-test p = 0.1: "
                                             "significant at 5 %, a is faster\n")
                    .empty());
    CHECK_FALSE(test::verdict_contradictions("significance: 2 devices: a > b, 1.437x [1.240, 1.869], "
                                             "Mann-Whitney p = 0.1\n")
                    .empty());
    CHECK_FALSE(test::verdict_contradictions("- a / b = 1.01x [0.9, 1.1], Welch's t-test p = 0.01: not significant "
                                             "at 5 %, not ranked\n")
                    .empty());
    CHECK_FALSE(test::csv_verdict_contradictions("run_id,speedup_p,speedup_verdict\nx,0.2,faster\n").empty());
    CHECK_FALSE(test::verdict_contradictions("significance: 2 devices: a > b (Welch's t-test p = < 0.001), 1.9x\n")
                    .empty());
    // A row named "dp" is no p-value.
    CHECK(test::verdict_contradictions("- 2 devices: ddp / dp = 1.486x [1.300, 1.700], Welch's t-test p = 0.0056: "
                                       "significant at 5 %, ddp is faster\n")
              .empty());
  }
}

TEST_CASE("the CSV states each row's verdict against its baseline with the test's p-value") {
  auto c = compare_repeats();
  auto csv = report::csv_report(c);
  // ddp {190, 170, 180} against the baseline {104, 96, 100}: scipy's p 0.000220.
  CHECK(csv.find(",0.0002202,faster") != std::string::npos);
  CHECK(csv.find("too few runs") != std::string::npos);  // fsdp ran once
}
