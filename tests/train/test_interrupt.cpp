// Issue 22, class 3: a SLURM time limit, scancel or Ctrl-C loses nothing
// measured. SIGTERM (what SLURM sends at the limit, and for the --signal the
// job scripts ask for ahead of it) stops every rank at the same step
// boundary; rank 0 writes the results folder with status interrupted; a
// signal to the built-in launcher is reported as such.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

// Long enough that a test whose signal is lost fails on the step count
// rather than passing on a finished run.
const char* kLong = " --max-steps 40 --synthetic-samples 64 --max-seq-length 32 --doc-stride 8 --threads 1";

nlohmann::json run_json(const fs::path& folder) { return nlohmann::json::parse(read_file(folder / "run.json")); }

int64_t loss_rows(const fs::path& folder) {
  auto text = read_file(folder / "loss.csv");
  return static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) - 1;  // less the header
}

}  // namespace

TEST_CASE("SIGTERM at step 5 of 40: the run stops there and writes its folder as interrupted") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(fmt::format("HPCBENCH_TEST_FAULT=0:5:term '{}' run{} --run-name t --results-dir '{}'",
                                         bin(), kLong, results.string()));
  INFO(r.output);
  // As a shell reports a process SIGTERM ended, after the folder is written.
  CHECK(r.exit_code == 128 + 15);
  REQUIRE(fs::exists(results / "t" / "run.json"));
  auto j = run_json(results / "t");
  CHECK(j["result"]["status"] == "interrupted");
  CHECK(j["result"]["steps"] == 5);
  CHECK(j["steps"].size() == 5);
  CHECK(loss_rows(results / "t") == 5);
  CHECK(j["interrupted"]["signal"] == "SIGTERM");
  CHECK(j["interrupted"]["steps_planned"] == 40);
  CHECK(j["interrupted"]["during"] == "training");
  CHECK(read_file(results / "t" / "summary.csv").find(",interrupted,") != std::string::npos);
  CHECK(r.output.find("interrupted by SIGTERM after 5 of 40 steps") != std::string::npos);
}

TEST_CASE("SIGTERM to one rank of two: both stop at the same boundary and rank 0 writes the folder") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(fmt::format("HPCBENCH_TEST_FAULT=1:3:term '{}' run --strategy ddp --nproc-per-node 2{} "
                                         "--collective-timeout 20 --run-name t --results-dir '{}'",
                                         bin(), kLong, results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 128 + 15);
  REQUIRE(fs::exists(results / "t" / "run.json"));
  auto j = run_json(results / "t");
  CHECK(j["result"]["status"] == "interrupted");
  // Rank 1 asked after its step 3; rank 0 may already have been inside
  // step 4, which both then finished.
  const auto steps = j["result"]["steps"].get<int64_t>();
  CHECK((steps == 3 || steps == 4));
  CHECK(j["steps"].size() == static_cast<size_t>(steps));
  CHECK(j["interrupted"]["requested_by_rank"] == 1);
  CHECK(r.output.find("[launcher] job failed") == std::string::npos);
  CHECK(r.output.find("[launcher] the ranks stopped on a signal sent to them") != std::string::npos);
}

TEST_CASE("SIGTERM to the launcher is reported as such, and the ranks' folder is written") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(fmt::format("HPCBENCH_TEST_FAULT=0:3:term-launcher '{}' run --strategy ddp "
                                         "--nproc-per-node 2{} --collective-timeout 20 --run-name t --results-dir '{}'",
                                         bin(), kLong, results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 128 + 15);
  CHECK(r.output.find("[launcher] SIGTERM: passed to the 2 ranks, which stop at their next step boundary") !=
        std::string::npos);
  CHECK(r.output.find("[launcher] interrupted by SIGTERM (signal 15)") != std::string::npos);
  // Not a rank's failure: no rank is blamed for the signal it was sent.
  CHECK(r.output.find("killed by signal 15") == std::string::npos);
  CHECK(r.output.find("[launcher] job failed") == std::string::npos);
  REQUIRE(fs::exists(results / "t" / "run.json"));
  CHECK(run_json(results / "t")["result"]["status"] == "interrupted");
}

TEST_CASE("a signal during evaluation keeps the training figures and leaves no metric of part of the dev set") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // The signal comes after the last step: the loop is over, evaluation
  // sees it at its first batch.
  auto r = test::run_command(fmt::format("HPCBENCH_TEST_FAULT=0:3:term '{}' run --max-steps 3 --synthetic-samples 64 "
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
