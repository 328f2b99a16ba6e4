// Issue 22, class 3: a SLURM time limit, scancel or Ctrl-C loses nothing
// measured. SIGTERM (what SLURM sends at the limit, and for the --signal the
// job scripts ask for ahead of it) stops every rank at the same step
// boundary; rank 0 writes the results folder with status interrupted; a
// signal to the built-in launcher is reported as such.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

nlohmann::json run_json(const fs::path& folder) { return nlohmann::json::parse(read_file(folder / "run.json")); }

int64_t loss_rows(const fs::path& folder) {
  auto text = read_file(folder / "loss.csv");
  return static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) - 1;  // less the header
}

// Far more steps than the test waits for: a signal that is lost shows as a
// run that finished, or as one that was killed, never as a pass.
const char* kLong = " --max-steps 400 --log-every 1 --synthetic-samples 64 --max-seq-length 32 --doc-stride 8 --threads 1";

struct Signalled {
  int exit_code = -1;
  std::string output;
};

// Runs `args` in the background and, once its log shows step 5 done, sends
// SIGTERM to `target`: "job" (the process started: a single run, or the
// launcher) or "rank N" (that rank's process, as SLURM signals each task).
Signalled signal_after_step_5(const fs::path& dir, const std::string& args, const std::string& target) {
  auto log = (dir / "log").string();
  std::string pid = target == "job" ? "$pid"
                                    : "$(sed -n 's/^\\[launcher\\] " + target + " pid \\([0-9]*\\)$/\\1/p' '" + log + "')";
  auto r = test::run_command(fmt::format(
      "'{}' run{}{} > '{}' 2>&1 & pid=$!; "
      "for i in $(seq 1200); do grep -q 'step      5/400' '{}' && break; sleep 0.05; done; "
      "kill -TERM {}; wait $pid; echo \"exit=$?\"",
      bin(), kLong, args, log, log, pid));
  Signalled s;
  s.output = read_file(log);
  auto at = r.output.rfind("exit=");
  if (at != std::string::npos) s.exit_code = std::stoi(r.output.substr(at + 5));
  return s;
}

// The folder an interrupted run leaves: status interrupted, the steps it
// did (at least the 5 the test waited for, far fewer than asked), a loss
// row for each, the signal named.
void check_interrupted_folder(const fs::path& folder) {
  REQUIRE(fs::exists(folder / "run.json"));
  auto j = run_json(folder);
  CHECK(j["result"]["status"] == "interrupted");
  const auto steps = j["result"]["steps"].get<int64_t>();
  CHECK(steps >= 5);
  CHECK(steps < 400);
  CHECK(j["steps"].size() == static_cast<size_t>(steps));
  CHECK(loss_rows(folder) == steps);
  CHECK(j["interrupted"]["signal"] == "SIGTERM");
  CHECK(j["interrupted"]["steps_planned"] == 400);
  CHECK(j["interrupted"]["during"] == "training");
  CHECK(read_file(folder / "summary.csv").find(",interrupted,") != std::string::npos);
}

}  // namespace

TEST_CASE("SIGTERM to a run mid-way: it stops at the next step and writes its folder as interrupted") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto s = signal_after_step_5(dir.path, " --run-name t --results-dir '" + results.string() + "'", "job");
  INFO(s.output);
  // As a shell reports a process SIGTERM ended, once the folder is written.
  CHECK(s.exit_code == 128 + 15);
  check_interrupted_folder(results / "t");
  CHECK(s.output.find("interrupted by SIGTERM after") != std::string::npos);
}

TEST_CASE("SIGTERM to one rank of two: both stop at the same boundary and rank 0 writes the folder") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto s = signal_after_step_5(dir.path, " --strategy ddp --nproc-per-node 2 --collective-timeout 20 --run-name t "
                                         "--results-dir '" + results.string() + "'", "rank 1");
  INFO(s.output);
  CHECK(s.exit_code == 128 + 15);
  check_interrupted_folder(results / "t");
  // Rank 0 never got a signal: it learnt of rank 1's through the store.
  CHECK(run_json(results / "t")["interrupted"]["requested_by_rank"] == 1);
  CHECK(s.output.find("[launcher] job failed") == std::string::npos);
  CHECK(s.output.find("[launcher] the ranks stopped on SIGTERM, sent to a rank, not to the launcher") != std::string::npos);
}

TEST_CASE("SIGTERM to the launcher is reported as such, and the ranks' folder is written") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto s = signal_after_step_5(dir.path, " --strategy ddp --nproc-per-node 2 --collective-timeout 20 --run-name t "
                                         "--results-dir '" + results.string() + "'", "job");
  INFO(s.output);
  CHECK(s.exit_code == 128 + 15);
  CHECK(s.output.find("[launcher] SIGTERM: passed to the 2 ranks, which stop at their next step boundary") !=
        std::string::npos);
  CHECK(s.output.find("[launcher] interrupted by SIGTERM (signal 15)") != std::string::npos);
  // Not a rank's failure: no rank is blamed for the signal it was sent.
  CHECK(s.output.find("killed by signal 15") == std::string::npos);
  CHECK(s.output.find("[launcher] job failed") == std::string::npos);
  check_interrupted_folder(results / "t");
}

TEST_CASE("a signal during evaluation keeps the training figures and leaves no metric of part of the dev set") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // The signal comes after the last step: the loop is over, evaluation
  // sees it at its first batch.
  auto r = test::run_command(fmt::format("HPCBENCH_INJECT=fault=0:3:term '{}' run --max-steps 3 --synthetic-samples 64 "
                                         "--max-seq-length 64 --doc-stride 16 --threads 1 --eval-data '{}' --vocab '{}' "
                                         "--cache-dir none --run-name t --results-dir '{}'",
                                         bin(), test::squad_file("dev-v1.1-sample.json"), test::vocab_file(),
                                         results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 128 + 15);
  REQUIRE(fs::exists(results / "t" / "run.json"));
  auto j = run_json(results / "t");
  CHECK(j["result"]["status"] == "interrupted");
  CHECK(j["result"]["steps"] == 3);
  CHECK(j["result"]["exact_match"] == -1);
  CHECK(j["result"]["f1"] == -1);
  CHECK(j["evaluation"]["interrupted"] == true);
  CHECK(j["interrupted"]["during"] == "evaluation");
  CHECK(!fs::exists(results / "t" / "predictions.json"));
}
