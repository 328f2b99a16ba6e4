#include "test_catch.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "results/csv.h"
#include "report/plot.h"
#include "report/report_tables.h"
#include "results/run_reader.h"
#include "report_fixtures.h"
#include "test_env.h"

using namespace hpcbench;

namespace {

// Compares with the hand-checked file in tests/report/snapshots; on a
// mismatch the failure shows `diff -u expected actual`.
void check_snapshot(const std::string& name, const std::string& actual) {
  auto expected_path = test::source_dir() / "tests/report/snapshots" / name;
  // HPCBENCH_UPDATE_SNAPSHOTS=1 rewrites the files (review the diff in git).
  if (const char* u = std::getenv("HPCBENCH_UPDATE_SNAPSHOTS"); u && std::string(u) == "1")
    write_file_atomic(expected_path, actual);
  std::string expected = read_file(expected_path);
  if (expected == actual) {
    SUCCEED(name);
    return;
  }
  test::TempDir dir;
  write_file_atomic(dir.path / name, actual);
  std::string diff, cmd = "diff -u '" + expected_path.string() + "' '" + (dir.path / name).string() + "'";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) diff.append(buf, n);
    ::pclose(p);
  }
  FAIL("output differs from " << expected_path.string() << ":\n" << diff);
}

report::Comparison fixture_comparison() {
  auto runs = test::fixture_runs();
  std::vector<results::RunResult> results;
  for (auto& r : runs) results.push_back(r.result);
  auto i = report::choose_baseline(results, "auto");
  REQUIRE(i);
  return report::compare(runs, results[*i]);
}

}  // namespace

TEST_CASE("snapshot: terminal table") {
  // The 120-column default (the suite's environment turns wrapping off).
  const char* was = std::getenv("HPCBENCH_COLUMNS");
  const std::string before = was ? was : "";
  ::setenv("HPCBENCH_COLUMNS", "120", 1);
  auto text = report::terminal_report(fixture_comparison(), {});
  if (was) ::setenv("HPCBENCH_COLUMNS", before.c_str(), 1);
  else ::unsetenv("HPCBENCH_COLUMNS");
  check_snapshot("report.txt", text);
}

TEST_CASE("snapshot: Markdown") {
  check_snapshot("report.md", report::markdown_report(fixture_comparison(), {}, {"throughput.svg"}));
}

TEST_CASE("snapshot: CSV") { check_snapshot("report.csv", report::csv_report(fixture_comparison())); }

TEST_CASE("plots: each device is its own series, starting at its own baseline") {
  auto runs = test::device_runs();
  std::vector<results::RunResult> results;
  for (auto& r : runs) results.push_back(r.result);
  auto data = report::plot_data(report::compare(runs, results[*report::choose_baseline(results, "auto")]));
  INFO(data);
  // Single runs: the error bars' bounds are the points themselves.
  const std::string cols =
      "# devices samples_per_s speedup efficiency_pct memory_mib speedup_lo speedup_hi efficiency_lo "
      "efficiency_hi samples_per_s_lo samples_per_s_hi\n";
  CHECK(data.find(fmt::format("# ddp {}\n{}1 10 1 100 1024 1 1 100 100 10 10\n2 15 1.5 75 600 1.5 1.5 75 75 15 15\n",
                              test::kXeon, cols)) != std::string::npos);
  CHECK(data.find(fmt::format("# ddp {}\n{}1 100 1 100 512 1 1 100 100 100 100\n2 180 1.8 90 384 1.8 1.8 90 90 180 "
                              "180\n4 300 3 75 328 3 3 75 75 300 300\n",
                              test::kA100, cols)) != std::string::npos);
  // Refused against the A100 baseline: no line from it, no speedup.
  CHECK(data.find(fmt::format("# ddp {}\n{}2 400 NaN NaN 300 NaN NaN NaN NaN 400 400\n", test::kH100, cols)) !=
        std::string::npos);
}

TEST_CASE("snapshot: published figures") {
  std::vector<std::string> warnings;
  auto sets = report::read_references(test::source_dir() / "results/reference", warnings);
  std::string out;
  for (auto& s : sets)
    if (s.name.starts_with("nvidia")) out = report::terminal_report({}, {s});
  check_snapshot("reference_nvidia.txt", out);
}

TEST_CASE("RFC 4180: quotes, doubled quotes, line breaks, CRLF, blank lines") {
  auto rec = results::parse_csv("a,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\n\n,,\n");
  REQUIRE(rec.size() == 3);
  CHECK(rec[0] == results::CsvRecord{"a", "b", "c"});
  CHECK(rec[1] == results::CsvRecord{"x,1", "say \"hi\"", "two\nlines"});
  CHECK(rec[2] == results::CsvRecord{"", "", ""});
  CHECK(results::parse_csv("a\n1").size() == 2);  // no final line break
  CHECK_THROWS_WITH(results::parse_csv("a,b\n1,\"unterminated\n"), Catch::Contains("line 2"));
}

TEST_CASE("a row of the current schema reads back field for field") {
  auto r = test::make_run("x", "fsdp", 4, 16, 123.5, 100);
  r.hosts = "n1,n2";
  auto rec = results::parse_csv(results::csv_header() + results::csv_row(r));
  auto back = results::result_from_csv(rec[0], rec[1]);
  CHECK(results::csv_row(back) == results::csv_row(r));
  CHECK(back.schema_version == results::kSchemaVersion);
}

TEST_CASE("results of the previous schema version still read") {
  auto loaded = results::read_results({test::source_dir() / "tests/report/data/v0"});
  CHECK(loaded.warnings.empty());
  REQUIRE(loaded.runs.size() == 2);
  auto& csv = loaded.runs[0].result;
  CHECK(csv.run_id == "old-csv");
  CHECK(csv.schema_version == 0);
  CHECK(csv.hosts == "node1,slot0");
  CHECK(csv.samples_per_s == Approx(100.0));  // 400 samples in 4 s
  CHECK(csv.samples_per_s_per_device == Approx(100.0));
  CHECK(csv.model_state_bytes == 0);
  CHECK(csv.eval_forward_s == -1);  // columns added later read as "not recorded"
  CHECK(csv.eval_postprocess_s == -1);
  auto& json = loaded.runs[1].result;
  CHECK(json.run_id == "old-json");
  CHECK(json.schema_version == 0);
  CHECK(json.samples_per_s_per_device == Approx(80.0));  // 160 / 2, a column it lacked
  CHECK(json.eval_load_s == -1);
  CHECK(json.eval_metric_s == -1);
  CHECK(loaded.runs[1].origin.filename() == "run.json");
  // And they compare: ddp on 2 devices at 160/s against 100/s.
  auto c = report::compare(loaded.runs, csv);
  CHECK(*c.rows[1].speedup == Approx(1.6));
}

TEST_CASE("bad values and truncated rows are reported with the column") {
  results::CsvRecord header{"run_id", "world_size", "samples_per_s"};
  CHECK_THROWS_WITH(results::result_from_csv(header, {"a", "two", "1"}),
                    Catch::Contains("world_size") && Catch::Contains("'two'"));
  CHECK_THROWS_WITH(results::result_from_csv(header, {"a", "2", "1.5x"}), Catch::Contains("samples_per_s"));
  CHECK_THROWS_WITH(results::result_from_csv(header, {"a", "2"}), Catch::Contains("2 fields where the header has 3"));
}
