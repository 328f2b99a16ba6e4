// `hpcbench report` end to end: run folders on disk, some of them corrupt.
#include "test_catch.h"
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/process.h"
#include "results/csv.h"
#include "report/plot.h"
#include "results/run_folder.h"
#include "report_fixtures.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;
using test::kA100, test::kH100, test::kXeon;

namespace {

struct Cli {
  int rc;
  std::string out, err;
};

Cli run_report(const test::TempDir& dir, const std::string& args) {
  auto out = dir.path / "stdout.txt", err = dir.path / "stderr.txt";
  // Unwrapped lines (HPCBENCH_COLUMNS=0) and the full table (--wide): these
  // tests search whole messages and every column; the 120-column view is
  // test_cli_main_width's and test_report's.
  std::string cmd = "HPCBENCH_COLUMNS=0 '" + test::hpcbench_bin().string() + "' report " + args + " --wide >'" +
                    out.string() + "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  Cli c{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
  INFO(cmd);
  INFO("stderr: " << c.err);
  return c;
}

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

// Good runs in runs/, and next to them a truncated run.json with no
// summary.csv, a summary.csv cut inside a quoted field, a run.json with a
// wrong type, and a corrupt run.json whose summary.csv still reads.
fs::path make_results(const test::TempDir& dir) {
  fs::path runs = dir.path / "results/runs";
  for (auto& lr : test::fixture_runs()) results::write_run_folder(runs, lr.result.run_id, lr.result);
  write(runs / "cut-json/run.json", "{\"result\": {\"run_id\": \"cut-json\", \"strategy\": \"ddp\", \"world_");
  write(runs / "cut-csv/summary.csv", "run_id,strategy,hosts\ncut-csv,ddp,\"node1,no");
  write(runs / "wrong-type/run.json", R"({"result": {"run_id": "wrong-type", "world_size": "two"}})");
  auto kept = test::make_run("json-bad-csv-good", "ddp", 8, 8, 560, 200);
  results::write_run_folder(runs, kept.run_id, kept);
  write(runs / "json-bad-csv-good/run.json", "not json");
  // An in-progress folder is not a run yet.
  write(runs / ".ddp.partial-123/run.json", "{");
  return runs;
}

// A copy of run folder `from` as a user would make it by hand: the result
// edited alike in run.json and in summary.csv (the reader's fall-back).
void copy_run(const fs::path& runs, const std::string& from, const std::string& id, nlohmann::json fields) {
  fs::copy(runs / from, runs / id, fs::copy_options::recursive);
  fields["run_id"] = id;
  auto json = nlohmann::json::parse(read_file(runs / id / "run.json"));
  for (auto& [k, v] : fields.items()) json["result"][k] = v;
  write(runs / id / "run.json", json.dump(1));
  auto csv = results::parse_csv(read_file(runs / id / "summary.csv"));
  std::string header, row;
  for (size_t i = 0; i < csv.at(0).size(); ++i) {
    const std::string& name = csv[0][i];
    std::string value = csv.at(1).at(i);
    if (fields.contains(name)) value = fields[name].is_string() ? fields[name].get<std::string>() : fields[name].dump();
    header += fmt::format("{}{}", i ? "," : "", name);
    row += fmt::format("{}\"{}\"", i ? "," : "", value);
  }
  write(runs / id / "summary.csv", header + "\n" + row + "\n");
}

// The table line of run `id` in the terminal report.
std::string table_line(const std::string& out, const std::string& id) {
  size_t at = out.find("\n" + id + " ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST_CASE("CLI: corrupt and truncated files are skipped by name, the rest is reported") {
  test::TempDir dir;
  auto runs = make_results(dir);
  auto c = run_report(dir, "'" + runs.string() + "' --no-plots");
  CHECK(c.rc == 0);
  CHECK(c.err.find("skipping " + (runs / "cut-json/run.json").string() + ": not valid JSON") != std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "cut-csv/summary.csv").string() + ": unterminated quoted field") !=
        std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "wrong-type/run.json").string() + ": a field has the wrong type") !=
        std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "json-bad-csv-good/run.json").string()) != std::string::npos);
  CHECK(c.err.find("partial") == std::string::npos);
  for (auto id : {"base-1x", "ddp-2x", "ddp-4x", "zero-2x", "fsdp-2x", "json-bad-csv-good"})
    CHECK(c.out.find(id) != std::string::npos);
  CHECK(c.out.find("cut-json") == std::string::npos);
  // The fall-back summary.csv row is compared: 560/s against 100/s.
  CHECK(c.out.find("5.60") != std::string::npos);
  CHECK(c.out.find("baseline: base-1x") != std::string::npos);
  CHECK(c.out.find("warning: ddp-2x-weak: no speedup against baseline base-1x: global batch 16 vs baseline 8") !=
        std::string::npos);
}

TEST_CASE("CLI: nothing readable exits with 2; an explicit baseline; CSV to stdout") {
  test::TempDir dir;
  auto runs = make_results(dir);
  auto none = run_report(dir, "'" + (runs / "cut-json").string() + "' '" + (dir.path / "missing").string() + "'");
  CHECK(none.rc == 2);
  CHECK(none.err.find("skipping " + (dir.path / "missing").string() + ": no such file or folder") !=
        std::string::npos);
  auto c = run_report(dir, "'" + (runs / "ddp-2x").string() + "' '" + (runs / "ddp-4x/summary.csv").string() +
                               "' --baseline ddp-2x --format csv");
  CHECK(c.rc == 0);
  CHECK(c.out.find("ddp-4x,ddp,4,8,ok,300,75,1.66667,0.833333,") != std::string::npos);
  auto bad = run_report(dir, "'" + runs.string() + "' --baseline nope");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--baseline nope: no such run") != std::string::npos);
}

TEST_CASE("CLI: --out writes report.md and report.csv; --reference adds the published figures") {
  test::TempDir dir;
  auto runs = make_results(dir);
  auto out = dir.path / "report";
  auto c = run_report(dir, "'" + runs.string() + "' --no-plots --reference --reference-dir '" +
                               (test::source_dir() / "results/reference").string() + "' --out '" + out.string() + "'");
  CHECK(c.rc == 0);
  auto md = read_file(out / "report.md");
  CHECK(md.find("| base-1x | baseline |") != std::string::npos);
  CHECK(md.find("## Published figures") != std::string::npos);
  CHECK(md.find("NVIDIA DeepLearningExamples") != std::string::npos);
  CHECK(read_file(out / "report.csv").starts_with("run_id,strategy,devices,"));
  CHECK_FALSE(fs::exists(out / "plots.gp"));
  CHECK(c.out.find("published figures: lightning_2xa100_bert_base_squad2") != std::string::npos);
  CHECK(c.out.find("5108.80") != std::string::npos);
}

TEST_CASE("CLI: without gnuplot the report says what to install and writes the rest") {
  test::TempDir dir;
  auto runs = make_results(dir);
  auto out = dir.path / "report";
  auto c = run_report(dir, "'" + runs.string() + "' --gnuplot /nonexistent/gnuplot --out '" + out.string() + "'");
  CHECK(c.rc == 0);
  CHECK(c.err.find("apt-get install gnuplot-nox") != std::string::npos);
  CHECK(fs::exists(out / "report.md"));
  CHECK(fs::exists(out / "report.csv"));
  CHECK(fs::exists(out / "plots.gp"));
  CHECK(fs::exists(out / "plot-data.dat"));
  CHECK_FALSE(fs::exists(out / "throughput.png"));
}

TEST_CASE("CLI: plots as PNG and SVG when gnuplot is installed") {
  if (hpcbench::find_program("gnuplot").empty()) {
    WARN("gnuplot is not installed (apt-get install gnuplot-nox): plot files not checked");
    return;
  }
  test::TempDir dir;
  auto runs = make_results(dir);
  auto out = dir.path / "report";
  auto c = run_report(dir, "'" + runs.string() + "' --out '" + out.string() + "'");
  CHECK(c.rc == 0);
  CHECK(c.err.find("no plots") == std::string::npos);
  for (auto name : {"throughput", "speedup", "efficiency", "memory"}) {
    INFO(name);
    auto png = read_file(out / (std::string(name) + ".png"));
    CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
    CHECK(png.size() > 2000);
    auto svg = read_file(out / (std::string(name) + ".svg"));
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("</svg>") != std::string::npos);
  }
  CHECK(read_file(out / "report.md").find("![speedup](speedup.svg)") != std::string::npos);
  // No temporary files left behind (the marker that makes it a report's folder stays).
  for (auto& e : fs::directory_iterator(out))
    if (e.path().filename() != ".hpcbench-report") CHECK_FALSE(e.path().filename().string().starts_with("."));
}

// Issue 44, class 7: a report folder is written whole. A second report into
// the folder of a first left the first's plots (named by its runs) beside
// its own; a folder that holds what no report writes is refused, untouched.
TEST_CASE("CLI: a second report into one --out replaces the first whole; a foreign folder is refused") {
  test::TempDir dir;
  auto runs = make_results(dir);
  auto out = dir.path / "report";
  fs::create_directories(out);
  // What a report of other runs left there: a run's utilisation plot and its data.
  write_file_atomic(out / "utilisation-gone-run.dat", "0 1\n");
  write_file_atomic(out / "utilisation-gone-run.svg", "<svg></svg>");
  auto c = run_report(dir, "'" + runs.string() + "' --no-plots --out '" + out.string() + "'");
  INFO(c.err);
  CHECK(c.rc == 0);
  CHECK(fs::exists(out / "report.md"));
  CHECK_FALSE(fs::exists(out / "utilisation-gone-run.dat"));
  CHECK_FALSE(fs::exists(out / "utilisation-gone-run.svg"));
  // Again into it: taken as the earlier report it is.
  c = run_report(dir, "'" + runs.string() + "' --no-plots --out '" + out.string() + "'");
  CHECK(c.rc == 0);

  auto mine = dir.path / "mine";
  fs::create_directories(mine);
  write_file_atomic(mine / "notes.txt", "keep me");
  c = run_report(dir, "'" + runs.string() + "' --no-plots --out '" + mine.string() + "'");
  INFO(c.err);
  CHECK(c.rc == 2);
  CHECK_THAT(c.err, Catch::Contains("--out " + mine.string() + ": the folder holds notes.txt, which no report writes"));
  CHECK(read_file(mine / "notes.txt") == "keep me");
  CHECK_FALSE(fs::exists(mine / "report.md"));
}

TEST_CASE("CLI: runs on another device type or GPU model are shown with the reason, never divided") {
  test::TempDir dir;
  fs::path runs = dir.path / "results/runs";
  for (auto r : {test::make_run("base-a100", "baseline", 1, 8, 100, 512),
                 test::make_run("ddp-a100", "ddp", 2, 8, 180, 384)})
    results::write_run_folder(runs, r.run_id, test::on_device(r, "cuda", kA100));
  // Divided by base-a100 these would print 4.00 and 0.37.
  copy_run(runs, "ddp-a100", "ddp-h100", {{"device_name", kH100}, {"samples_per_s", 400}});
  copy_run(runs, "ddp-a100", "ddp-cpu",
           {{"device", "cpu"}, {"device_name", kXeon}, {"samples_per_s", 37}, {"samples_per_s_per_device", 18.5}});

  auto c = run_report(dir, "'" + runs.string() + "' --no-plots");
  REQUIRE(c.rc == 0);
  INFO(c.out);
  CHECK(c.out.find("baseline: base-a100 (baseline, 1 GPU, cuda NVIDIA A100-SXM4-80GB, model") != std::string::npos);
  CHECK(c.out.find("warning: ddp-cpu: no speedup against baseline base-a100: device cpu vs baseline cuda") !=
        std::string::npos);
  CHECK(c.out.find(fmt::format("warning: ddp-h100: no speedup against baseline base-a100: device name {} vs "
                               "baseline {}",
                               kH100, kA100)) != std::string::npos);
  for (auto [id, speedup] : {std::pair{"ddp-cpu", "0.37"}, std::pair{"ddp-h100", "4.00"}}) {
    auto line = table_line(c.out, id);
    INFO(line);
    CHECK(line.find("n/c") != std::string::npos);
    CHECK(line.find(speedup) == std::string::npos);
  }
  CHECK(table_line(c.out, "ddp-a100").find(" 1.80 ") != std::string::npos);  // the same GPU model compares
  CHECK(c.out.find("for the runs on its device") == std::string::npos);

  auto csv = run_report(dir, "'" + runs.string() + "' --format csv");
  CHECK(csv.out.find("\nddp-cpu,ddp,2,8,ok,37,18.5,n/c,n/c,n/c,402653184,n/c,67108864,base-a100,device cpu vs "
                     "baseline cuda,1,") != std::string::npos);

  // A CPU baseline in the same folder serves the CPU run (37/s over 20/s);
  // the GPU runs keep theirs, and the H100 run, with no baseline of its own,
  // stays refused. (Older than base-a100, which serves as many runs, so that
  // the auto choice stays base-a100.)
  copy_run(runs, "base-a100", "base-cpu",
           {{"device", "cpu"}, {"device_name", kXeon}, {"samples_per_s", 20}, {"samples_per_s_per_device", 20},
            {"started_at", "2024-12-01T00:00:00Z"}});
  auto both = run_report(dir, "'" + runs.string() + "' --no-plots");
  REQUIRE(both.rc == 0);
  INFO(both.out);
  CHECK(both.out.find("baseline: base-a100 (") != std::string::npos);
  CHECK(both.out.find(fmt::format("baseline: base-cpu (baseline, 1 device, cpu {}, model", kXeon)) != std::string::npos);
  CHECK(both.out.find("for the runs on its device") != std::string::npos);
  auto cpu_line = table_line(both.out, "ddp-cpu");
  CHECK(cpu_line.find(" 1.85 ") != std::string::npos);
  CHECK(cpu_line.ends_with(" base-cpu"));
  CHECK(table_line(both.out, "ddp-a100").ends_with(" base-a100"));
  CHECK(both.out.find("warning: ddp-cpu") == std::string::npos);
  CHECK(both.out.find("warning: ddp-h100: no speedup against baseline base-a100: device name") != std::string::npos);
}

TEST_CASE("CLI: no ratio of a figure that cannot be trusted; no status is not ok; newer schemas and link loops are said") {
  test::TempDir dir;
  fs::path runs = dir.path / "runs";
  auto timed = [](results::RunResult r, double train_time_s) {
    r.samples_timed = 8000;
    r.train_time_s = train_time_s;
    return r;
  };
  results::write_run_folder(runs, "base-1x", timed(test::make_run("base-1x", "baseline", 1, 8, 100, 512), 80));
  results::write_run_folder(runs, "ddp-2x", timed(test::make_run("ddp-2x", "ddp", 2, 8, 180, 384), 44.4));
  // Throughput NaN (run.json holds null) or negative, with a training time
  // that alone would still give a speedup.
  results::write_run_folder(runs, "ddp-nan", timed(test::make_run("ddp-nan", "ddp", 2, 8, std::nan(""), 384), 40));
  results::write_run_folder(runs, "ddp-neg", timed(test::make_run("ddp-neg", "ddp", 2, 8, -180, 384), 40));
  // A hand-made summary.csv without a status column, and a run.json without status.
  write(runs / "no-status-csv/summary.csv",
        "run_id,strategy,world_size,gpus_per_node,device,precision,model,seq_length,global_batch,batch_per_device,data,"
        "samples_per_s\nno-status-csv,ddp,2,2,cuda,fp32,bert-tiny,128,8,4,synthetic:256:seed1,170\n");
  auto no_status = nlohmann::json::parse(read_file(runs / "ddp-2x/run.json"));
  no_status["result"].erase("status");
  no_status["result"]["run_id"] = "no-status-json";
  write(runs / "no-status-json/run.json", no_status.dump(1));
  // Written by a newer hpcbench.
  auto newer = nlohmann::json::parse(read_file(runs / "ddp-2x/run.json"));
  newer["result"]["schema_version"] = results::kSchemaVersion + 1;
  newer["result"]["run_id"] = "newer";
  write(runs / "newer/run.json", newer.dump(1));
  // Links that loop: onto itself, back to a folder above, a run.json onto itself.
  fs::create_directory_symlink("loop", runs / "loop");
  fs::create_directory_symlink("..", runs / "up");
  fs::create_directories(runs / "self");
  fs::create_symlink("run.json", runs / "self/run.json");

  auto c = run_report(dir, "'" + runs.string() + "' --no-plots");
  INFO(c.out);
  CHECK(c.rc == 0);
  CHECK(c.err.find("internal error") == std::string::npos);
  CHECK(c.out.find("ddp-nan: no speedup against baseline base-1x: samples_per_s is nan") != std::string::npos);
  CHECK(c.out.find("ddp-neg: no speedup against baseline base-1x: samples_per_s is -180") != std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "newer/run.json").string() + ": newer: schema_version " +
                   std::to_string(results::kSchemaVersion + 1) + " is newer than this hpcbench reads") !=
        std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "loop").string() + ": a loop of symbolic links") != std::string::npos);
  CHECK(c.err.find("skipping " + (runs / "up").string()) != std::string::npos);
  CHECK(c.err.find((runs / "self/run.json").string()) != std::string::npos);

  auto csv = run_report(dir, "'" + runs.string() + "' --format csv");
  auto rows = results::parse_csv(csv.out);
  REQUIRE(!rows.empty());
  auto col = [&](const std::string& name) {
    auto it = std::find(rows[0].begin(), rows[0].end(), name);
    REQUIRE(it != rows[0].end());
    return static_cast<size_t>(it - rows[0].begin());
  };
  std::map<std::string, results::CsvRecord> by_id;
  for (size_t i = 1; i < rows.size(); ++i) by_id[rows[i][0]] = rows[i];
  CHECK(by_id.count("newer") == 0);
  REQUIRE(by_id.count("ddp-2x") == 1);
  CHECK(!by_id["ddp-2x"][col("speedup")].empty());  // the trusted run still is compared
  for (const char* id : {"ddp-nan", "ddp-neg", "no-status-csv", "no-status-json"}) {
    INFO(id);
    REQUIRE(by_id.count(id) == 1);
    // Empty, or "n/c" with the reason in not_comparable: never a figure.
    for (const char* figure : {"speedup", "efficiency", "weak_scaling_efficiency"})
      CHECK(by_id[id][col(figure)].find_first_of("0123456789") == std::string::npos);
  }
  CHECK(by_id["no-status-csv"][col("status")] == "unknown");
  CHECK(by_id["no-status-json"][col("status")] == "unknown");

  // Neither is a baseline to divide by.
  auto bad = run_report(dir, "'" + runs.string() + "' --baseline ddp-nan");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--baseline ddp-nan: samples_per_s is nan") != std::string::npos);
}

// Issue 22, class 3: a run a stop signal interrupted is shown, never divided
// by, unless the user asks.
TEST_CASE("CLI: interrupted runs are shown without speedup unless --include-interrupted") {
  test::TempDir dir;
  fs::path runs = dir.path / "runs";
  results::write_run_folder(runs, "base-1x", test::make_run("base-1x", "baseline", 1, 8, 100, 512));
  results::write_run_folder(runs, "ddp-2x", test::make_run("ddp-2x", "ddp", 2, 8, 180, 384));
  auto cut = test::make_run("ddp-4x", "ddp", 4, 8, 300, 328);
  cut.status = "interrupted";
  cut.steps = 7;
  results::write_run_folder(runs, "ddp-4x", cut);

  auto column = [](const Cli& c, const std::string& id, const std::string& name) {
    auto rows = results::parse_csv(c.out);
    REQUIRE(!rows.empty());
    auto it = std::find(rows[0].begin(), rows[0].end(), name);
    REQUIRE(it != rows[0].end());
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i][0] == id) return rows[i][static_cast<size_t>(it - rows[0].begin())];
    FAIL("no row " << id);
    return std::string();
  };
  auto csv = run_report(dir, "'" + runs.string() + "' --format csv");
  CHECK(csv.rc == 0);
  CHECK(column(csv, "ddp-4x", "status") == "interrupted");
  CHECK(column(csv, "ddp-4x", "speedup").find_first_of("0123456789") == std::string::npos);
  CHECK(column(csv, "ddp-2x", "speedup") == "1.8");
  auto text = run_report(dir, "'" + runs.string() + "' --no-plots");
  CHECK(text.out.find("interrupted before their end (a time limit, scancel or Ctrl-C), shown without speedup or "
                      "efficiency: ddp-4x (7 steps)") != std::string::npos);

  csv = run_report(dir, "'" + runs.string() + "' --format csv --include-interrupted");
  CHECK(csv.rc == 0);
  CHECK(column(csv, "ddp-4x", "speedup") == "3");
  text = run_report(dir, "'" + runs.string() + "' --no-plots --include-interrupted");
  CHECK(text.out.find("counted as finished runs (--include-interrupted), their figures over the steps they did: "
                      "ddp-4x (7 steps)") != std::string::npos);
}
