// Issue 33, class 3: every results file is read bounded and its numbers
// checked, so that a damaged, hostile or hand-made file is skipped with its
// reason instead of becoming a figure, aborting the report or eating the
// memory. Fixtures are made by each test.
#include "test_catch.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "core/error.h"
#include "core/stop_signal.h"
#include "results/bench_comm_file.h"
#include "results/run_folder.h"
#include "results/run_reader.h"
#include "results/steps.h"
#include "results/utilisation_csv.h"
#include "test_env.h"

using namespace hpcbench;
using namespace hpcbench::results;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

RunResult good_run(const std::string& id) {
  RunResult r;
  r.run_id = id;
  r.strategy = "ddp";
  r.world_size = 2;
  r.gpus_per_node = 2;
  r.device = "cpu";
  r.precision = "fp32";
  r.model = "bert-tiny";
  r.seq_length = 128;
  r.batch_per_device = 8;
  r.global_batch = 16;
  r.samples_per_s = 120.5;
  r.samples_per_s_per_device = 60.25;
  r.step_ms_median = 130;
  r.train_time_s = 1.3;
  r.timed_steps = 10;
  r.samples_timed = 160;
  return r;
}

// A run folder whose run.json has `text` in place of the value of "result"."field".
fs::path run_with(const fs::path& root, const std::string& id, const std::string& field, const std::string& text) {
  auto folder = write_run_folder(root, id, good_run(id));
  auto json = folder / "run.json";
  auto j = nlohmann::json::parse(test::slurp(json));
  j["result"][field] = "@@";
  std::string s = j.dump(1);
  s.replace(s.find("\"@@\""), 4, text);
  write_file_atomic(json, s);
  fs::remove(folder / "summary.csv");  // the reader would fall back on it
  return folder;
}

bool skipped(const LoadedRuns& l, const std::string& id, const std::string& why) {
  for (auto& w : l.warnings)
    if (w.find(id) != std::string::npos && w.find(why) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("absurd but finite figures skip their file, naming the figure; the other runs still read") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  write_run_folder(root, "good", good_run("good"));
  run_with(root, "fast", "samples_per_s", "1e308");
  run_with(root, "huge", "world_size", "4611686018427387904");  // 2^62
  run_with(root, "tiny-step", "step_ms_median", "-1e300");
  run_with(root, "negative-nodes", "nodes", "-3");
  auto l = read_results({root});
  INFO(fmt::format("{}", fmt::join(l.warnings, "\n")));
  REQUIRE(l.runs.size() == 1);
  CHECK(l.runs[0].result.run_id == "good");
  CHECK(skipped(l, "fast", "samples_per_s 1e+308 is beyond what any run produces"));
  CHECK(skipped(l, "huge", "world_size 4611686018427387904"));
  CHECK(skipped(l, "tiny-step", "step_ms_median"));
  CHECK(skipped(l, "negative-nodes", "nodes -3 is negative"));
}

TEST_CASE("a number no double holds (1e400) skips that file with its reason, not the report") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  write_run_folder(root, "good", good_run("good"));
  run_with(root, "overflow", "samples_per_s", "1e400");
  LoadedRuns l;
  REQUIRE_NOTHROW(l = read_results({root}));
  REQUIRE(l.runs.size() == 1);
  CHECK(skipped(l, "overflow", "1e400"));
}

TEST_CASE("a null figure stays a NaN the report shows as untrusted; the file is not skipped for it") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  run_with(root, "null-step", "step_ms_median", "null");
  auto l = read_results({root});
  REQUIRE(l.runs.size() == 1);
  CHECK(std::isnan(l.runs[0].result.step_ms_median));
}

TEST_CASE("a run.json that is a link to an endless file or a FIFO is refused before it is read") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  fs::create_directories(root / "zero");
  fs::create_symlink("/dev/zero", root / "zero" / "run.json");
  fs::create_directories(root / "fifo");
  REQUIRE(::mkfifo((root / "fifo" / "run.json").c_str(), 0600) == 0);
  fs::create_directories(root / "loop");
  fs::create_symlink(root / "loop" / "run.json", root / "loop" / "run.json");
  write_run_folder(root, "good", good_run("good"));
  const auto t0 = std::chrono::steady_clock::now();
  auto l = read_results({root});
  // Refused at once: not read until the memory is gone, not waited on.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  INFO(fmt::format("{}", fmt::join(l.warnings, "\n")));
  REQUIRE(l.runs.size() == 1);
  CHECK(skipped(l, "zero", "not a regular file"));
  CHECK(skipped(l, "fifo", "not a regular file"));
  CHECK(skipped(l, "loop", "loop of symbolic links"));
}

TEST_CASE("read_file_bounded: the limit, a file that is not regular, and the bytes as they are") {
  test::TempDir dir;
  auto f = dir.path / "f";
  write_file_atomic(f, std::string(5000, 'x'));
  CHECK(read_file_bounded(f, 5000) == std::string(5000, 'x'));
  CHECK_THROWS_WITH(read_file_bounded(f, 4999), Contains("more than the 4999 bytes"));
  CHECK_THROWS_WITH(read_file_bounded("/dev/zero", 100), Contains("/dev/zero"));
  CHECK_THROWS_WITH(read_file_bounded(dir.path, 100), Contains("a folder"));
  CHECK_THROWS_AS(read_file_bounded(dir.path / "missing", 100), UserError);
  write_file_atomic(f, "");
  CHECK(read_file_bounded(f, 0).empty());
}

TEST_CASE("a summary.csv with an absurd figure is skipped like a run.json") {
  test::TempDir dir;
  auto folder = write_run_folder(dir.path / "runs", "csv", good_run("csv"));
  fs::remove(folder / "run.json");
  auto r = good_run("csv");
  r.world_size = int64_t{1} << 40;
  write_file_atomic(folder / "summary.csv", csv_header() + csv_row(r));
  auto l = read_results({folder});
  CHECK(l.runs.empty());
  CHECK(skipped(l, "csv", "world_size"));
}

TEST_CASE("a rank's timing with a field missing, null or absurd, or ranks out of order, is not read as zeros") {
  test::TempDir dir;
  RunFiles run(good_run("ranks"));
  RankTiming a, b;
  a.rank = 0;
  a.step_ms = 10;
  b.rank = 1;
  b.step_ms = 12;
  run.rank_timing = {a, b};
  auto folder = write_run_folder(dir.path / "runs", "ranks", run);
  auto json = folder / "run.json";
  REQUIRE(read_rank_timing(json).has_value());
  REQUIRE(read_rank_timing(json)->size() == 2);
  const auto original = nlohmann::json::parse(test::slurp(json));
  auto with = [&](auto change) {
    auto j = original;
    change(j["rank_timing_ms"]);
    write_file_atomic(json, j.dump());
    return read_rank_timing(json);
  };
  CHECK_FALSE(with([](nlohmann::json& r) { r[1].erase("forward_ms"); }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[1].erase("step_ms"); }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[0]["step_ms"] = nullptr; }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[0]["step_ms"] = 1e308; }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[0]["step_ms"] = -5; }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[1]["rank"] = 7; }).has_value());
  CHECK_FALSE(with([](nlohmann::json& r) { r[1] = "x"; }).has_value());
  CHECK(with([](nlohmann::json&) {}).has_value());
}

TEST_CASE("bench-comm: a shape no job has, an overflowing count, or a time that is no time is refused") {
  test::TempDir dir;
  auto f = dir.path / "comm.txt";
  const std::string row = "     all_reduce         1024          256    float    sum    -1       10.00      0.1024      0.1024       0\n";
  auto read = [&](const std::string& text) {
    write_file_atomic(f, text);
    return read_bench_comm_file(f, "--comm");
  };
  CHECK_NOTHROW(read(bench_comm_shape_line("gloo", 2, 1, "x") + "\n" + row));
  CHECK_THROWS_WITH(read(bench_comm_shape_line("gloo", 0, 1, "x") + "\n" + row), Contains("is no job"));
  CHECK_THROWS_WITH(read("# backend gloo, 99999999999999 rank(s) on 1 node(s) (x)\n" + row),
                    Contains("no \"# backend"));
  CHECK_THROWS_WITH(read(bench_comm_shape_line("gloo", 4611686, 1, "x") + "\n" + row), Contains("is no job"));
  std::string bad_time = row;
  bad_time.replace(bad_time.find("10.00"), 5, "1e300");
  CHECK_THROWS_WITH(read(bench_comm_shape_line("gloo", 2, 1, "x") + "\n" + bad_time),
                    Contains("is not a measurement"));
  fs::remove(f);
  fs::create_symlink("/dev/zero", f);
  CHECK_THROWS_WITH(read_bench_comm_file(f, "--comm"), Contains("not a regular file"));
}

TEST_CASE("utilisation.csv: a sample no device gives is left out, not plotted") {
  UtilisationRow r;
  r.host = "h";
  r.time_s = 1;
  r.util_percent = 50;
  r.power_w = 100;
  auto bad = r;
  bad.util_percent = 1e300;
  bad.power_w = -4;
  auto late = r;
  late.time_s = 1e300;
  auto rows = parse_utilisation(utilisation_header() + utilisation_line(r) + utilisation_line(bad) +
                                utilisation_line(late));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].util_percent == 50);
  CHECK_FALSE(rows[1].util_percent.has_value());
  CHECK_FALSE(rows[1].power_w.has_value());
}

// Issue 44: a stop signal that comes while the report's scan reads a run is
// the end of the scan, not a file to skip. HPCBENCH_INJECT stop_read sends
// the signal before the file's first chunk (a file of more than one chunk,
// 8 MiB, is one a stop ends), in a child that has the run's handlers.
TEST_CASE("a stop signal while a run's record is read ends the scan with the signal, not a skipped run") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  write_run_folder(root, "good", good_run("good"));
  auto big = write_run_folder(root, "big", good_run("big"));
  fs::resize_file(big / "run.json", 20 * kMiB);  // three chunks
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::setenv("HPCBENCH_INJECT", "stop_read=run.json:TERM", 1);
    install_stop_handlers(false);
    std::string said;
    int rc = 0;
    try {
      auto l = read_results({root});
      said = fmt::format("carried on with {} run(s): {}", l.runs.size(), fmt::join(l.warnings, "; "));
    } catch (const Interrupted& e) {
      said = e.what();
      rc = 128 + e.signal();
    } catch (const std::exception& e) {
      said = std::string("other: ") + e.what();
    }
    (void)!::write(fds[1], said.data(), said.size());
    ::_exit(rc);
  }
  ::close(fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  INFO(said);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  CHECK_THAT(said, Contains("interrupted by SIGTERM while reading " + (big / "run.json").string()));
}
