// `hpcbench run` fails at the start for what would otherwise fail (or go
// wrong) at the end, shares the cores between local ranks, and warns about
// SQuAD answers that do not match their context, from the cache too.
#include "test_catch.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "distributed/local_launcher.h"
#include "results/run_folder.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

// Short, so that a check that no longer fires shows up as a failed test
// (the run gets through, or fails only after training) rather than a hang.
const char* kRun = " run --max-steps 2 --synthetic-samples 64 --threads 1";

// The trainer's first log line: a check that fired before it fired before
// the model was built, let alone trained.
const char* kTrainerStarted = "intra-op threads";

}  // namespace

TEST_CASE("check_run_name takes one ordinary folder name only") {
  for (const char* ok : {"a", "ddp-4x-20261126", "run_1.2", "a..b"}) {
    INFO(ok);
    CHECK_NOTHROW(results::check_run_name(ok));
  }
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", "x/..", ".hidden"}) {
    INFO(bad);
    CHECK_THROWS_AS(results::check_run_name(bad), UserError);
  }
  CHECK_THROWS_AS(results::check_run_name(std::string(201, 'a')), UserError);
  CHECK_NOTHROW(results::check_run_name(std::string(200, 'a')));
}

TEST_CASE("--run-name that is not one folder name fails before the first step, writing nothing") {
  test::TempDir dir;
  auto results = dir.path / "results";
  for (std::string name : {"../x", "a/b", ".."}) {
    INFO(name);
    auto r = test::run_command(fmt::format("cd '{}' && '{}' {} --run-name '{}' --results-dir '{}'", dir.path.string(),
                                           bin(), kRun, name, results.string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--run-name " + name) != std::string::npos);
    CHECK(r.output.find(kTrainerStarted) == std::string::npos);
    // Nothing anywhere: not in the results folder, not beside it.
    CHECK(test::entries(dir.path) == 0);
  }
}

TEST_CASE("a results folder that cannot take the run fails before the first step") {
  test::TempDir dir;
  // A file where the folder (or a folder above it) should be: refused even
  // for root, who can write anywhere else.
  write_file_atomic(dir.path / "file", "x");
  for (auto results : {dir.path / "file", dir.path / "file" / "results"}) {
    INFO(results);
    // The built-in launcher checks before it starts any rank.
    for (const char* launch : {"", " --nproc-per-node 2 --strategy ddp"}) {
      if (*launch && results.filename() == "results") continue;
      INFO(launch);
      auto r = test::run_command(fmt::format("'{}' {}{} --run-name ok --results-dir '{}'", bin(), kRun, launch,
                                             results.string()));
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("--results-dir " + results.string()) != std::string::npos);
      CHECK(r.output.find(kTrainerStarted) == std::string::npos);
    }
  }
  CHECK(test::entries(dir.path) == 1);

  // A folder that can take it is left as it was (the probe is removed).
  auto fine = dir.path / "fine";
  results::check_results_dir(fine);
  CHECK(fs::is_directory(fine));
  CHECK(test::entries(fine) == 0);
}

TEST_CASE("threads_per_rank: an equal share of the cores unless OMP_NUM_THREADS is set") {
  CHECK(dist::threads_per_rank({}, 2, 16) == 8);
  CHECK(dist::threads_per_rank({}, 3, 16) == 5);
  CHECK(dist::threads_per_rank({}, 4, 2) == 1);
  CHECK(dist::threads_per_rank({}, 1, 8) == 8);
  CHECK(dist::threads_per_rank({{"OMP_NUM_THREADS", "3"}}, 2, 16) == 0);
  CHECK(dist::threads_per_rank({{"OMP_NUM_THREADS", ""}}, 2, 16) == 8);
}

TEST_CASE("--nproc-per-node without --threads gives each rank its share of the cores") {
  // LibTorch's own default on this machine, from the reference stack with
  // OMP_NUM_THREADS unset (ctest sets it to 1 for every test).
  auto py = test::run_command("env -u OMP_NUM_THREADS '" + test::env_path("HPCBENCH_PY").string() +
                              "' -c 'import torch; print(torch.get_num_threads())'");
  REQUIRE(py.exit_code == 0);
  const int all = std::stoi(py.output);
  test::TempDir dir;
  auto results = dir.path / "results";
  auto run = [&](const std::string& name, const std::string& extra) {
    auto r = test::run_command(fmt::format("env -u OMP_NUM_THREADS '{}' run --max-steps 2 --synthetic-samples 64 "
                                           "--strategy ddp --nproc-per-node 2 --run-name {} --results-dir '{}'{}",
                                           bin(), name, results.string(), extra));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(read_file(results / name / "run.json"));
    return j["environment"]["intra_op_threads"].get<int>();
  };
  INFO("LibTorch's default here: " << all << " threads");
  CHECK(run("shared", "") == std::max(1, all / 2));
}

TEST_CASE("answers that do not match their context are reported by hpcbench run, from the cache too") {
  test::TempDir dir;
  auto squad = nlohmann::json::parse(read_file(test::squad_file("dev-v1.1-sample.json")));
  // Two answers moved off their text: the count the warning must give.
  auto& qas = squad["data"][0]["paragraphs"][0]["qas"];
  qas[0]["answers"][0]["answer_start"] = qas[0]["answers"][0]["answer_start"].get<int>() + 1;
  qas[1]["answers"][1]["answer_start"] = qas[1]["answers"][1]["answer_start"].get<int>() + 3;
  auto file = dir.path / "moved.json";
  write_file_atomic(file, squad.dump());
  for (bool cached : {false, true}) {
    INFO((cached ? "from the cache" : "built"));
    auto r = test::run_command(fmt::format("'{}' run --max-steps 1 --threads 1 --train-data '{}' --vocab '{}' "
                                           "--max-seq-length 128 --doc-stride 64 --cache-dir '{}' --results-dir '{}'",
                                           bin(), file.string(), test::vocab_file(), (dir.path / "cache").string(),
                                           (dir.path / "results").string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("2 answer(s) whose text is not at answer_start") != std::string::npos);
    CHECK((r.output.find("feature cache hit") != std::string::npos) == cached);
  }
}
