// The main job as a newcomer sees it, shortened (few steps, two repeats,
// no plots): every line it prints, the runs' log lines and summaries, the
// warnings and the report, fits a 120-column terminal; `report --wide` over
// the same runs still prints every column of the full table, which
// report.md keeps too.
#include "test_catch.h"

#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "report/verdict_check.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

// Columns of a line: its UTF-8 code points (the summaries' "…" and "σ" are
// one column each, three and two bytes).
size_t columns(const std::string& line) {
  size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> wide_lines(const std::string& text, size_t width) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (columns(line) > width) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("the main job's output fits 120 columns; report --wide prints every column", "[e2e]") {
  test::TempDir dir;
  // The default width (the suite's environment turns wrapping off).
  const std::string bin = "env -u HPCBENCH_COLUMNS " + test::hpcbench_bin().string();
  // 5 steps: 3 warm-up (fixed by the main job) and 2 timed; 2 repeats, so
  // that the report has intervals and a significance section.
  auto job = test::run_command(bin + " main --out " + (dir.path / "main").string() +
                               " --max-steps 5 --repeats 2 --no-plots");
  INFO(job.output);
  REQUIRE(job.exit_code == 0);
  REQUIRE(job.output.find("largest loss") != std::string::npos);  // the headline table was printed
  REQUIRE(job.output.find("significance: ranking") != std::string::npos);
  auto over = wide_lines(job.output, 120);
  for (auto& line : over) UNSCOPED_INFO("over 120 columns (" << columns(line) << "): " << line);
  CHECK(over.empty());

  // The full table: every column the runs have a figure in.
  const std::string runs = (dir.path / "main" / "runs").string();
  auto wide = test::run_command(bin + " report " + runs + " --wide");
  INFO(wide.output);
  REQUIRE(wide.exit_code == 0);
  auto narrow = test::run_command(bin + " report " + runs);
  REQUIRE(narrow.exit_code == 0);
  auto md = read_file(dir.path / "main" / "report" / "report.md");
  for (const char* title : {"strategy", "global batch", "status", "runs", "throughput", "per device", "speedup",
                            "efficiency", "weak scaling", "memory/device", "vs baseline", "model state",
                            "step p90", "comm", "exposed comm", "utilisation"}) {
    CHECK_THAT(wide.output, Catch::Contains(title));
    CHECK_THAT(md, Catch::Contains(title));
  }
  // The columns the headline leaves to --wide, and the pairs it leaves out.
  for (const char* title : {"weak scaling", "vs baseline", "model state", "step p90"})
    CHECK_THAT(narrow.output, !Catch::Contains(title));
  CHECK_THAT(wide.output, Catch::Contains("causes, largest first"));
  CHECK(wide_lines(narrow.output, 120).empty());
  CHECK_FALSE(wide_lines(wide.output, 120).empty());  // --wide is wider than a terminal, as it should be

  // No line of the main job's output calls a pair significant with another test's p-value or
  // one above 0.05: the terminal, --wide, report.md and report.csv.
  for (auto* text : {&job.output, &wide.output, &narrow.output, &md}) {
    auto bad = test::verdict_contradictions(*text);
    for (auto& b : bad) UNSCOPED_INFO(b);
    CHECK(bad.empty());
  }
  auto bad = test::csv_verdict_contradictions(read_file(dir.path / "main" / "report" / "report.csv"));
  for (auto& b : bad) UNSCOPED_INFO(b);
  CHECK(bad.empty());
  CHECK_THAT(md, Catch::Contains("Welch's t-test"));
}
