// `hpcbench run` fails at the start for what would otherwise fail (or go
// wrong) at the end, shares the cores between local ranks, and warns about
// SQuAD answers that do not match their context, from the cache too.
#include "test_catch.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "core/atomic_file.h"
#include "read_whole_file.h"
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
  // Issue 44: the name is written into run.json, which is UTF-8; a name that
  // is not (Latin-1's 0xe4, a lone continuation byte, an overlong '/') or
  // holds a control character is refused by the same rule.
  CHECK_NOTHROW(results::check_run_name("m\xc3\xa4rz-\xe6\xb5\x8b"));  // "märz-测", valid UTF-8
  for (const char* bad : {"m\xe4rz", "a\x80" "b", "\xc0\xafx", "tab\there", "new\nline", "del\x7f"}) {
    INFO(bad);
    CHECK_THROWS_AS(results::check_run_name(bad), UserError);
    CHECK_THROWS_WITH(results::check_run_name(bad, "--repeat-group"), Catch::StartsWith("--repeat-group "));
  }
}

TEST_CASE("--run-name and --repeat-group of invalid UTF-8 fail before the first step, not after training") {
  test::TempDir dir;
  auto results = dir.path / "results";
  for (const char* flag : {"--run-name", "--repeat-group"}) {
    INFO(flag);
    auto r = test::run_command(fmt::format("cd '{}' && '{}' {} {} \"$(printf 'm\\344rz')\" --results-dir '{}'",
                                           dir.path.string(), bin(), kRun, flag, results.string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(std::string(flag) + " m\\xe4rz: not valid UTF-8"));
    CHECK_THAT(r.output, !Catch::Contains("type_error"));
    CHECK(r.output.find(kTrainerStarted) == std::string::npos);
  }
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

// Issue 22, class 1: every figure counts the rows a step trained on.
TEST_CASE("a batch larger than the data is refused before the first step") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // The issue's example: 64 samples at batch 1024 reported 16x the samples
  // per second of batch 64 for the same step time.
  auto r = test::run_command(fmt::format("'{}' run --model bert-tiny --synthetic-samples 64 --batch-size 1024 "
                                         "--max-steps 4 --threads 1 --results-dir '{}'", bin(), results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--batch-size 1024 is larger than the data: there are 64 training samples") != std::string::npos);
  CHECK(r.output.find("use --batch-size 64 or less") != std::string::npos);
  CHECK(test::entries(results) == 0);
  // Per rank, after the split: 2 ranks of 32 samples cannot take 48.
  r = test::run_command(fmt::format("'{}' run --strategy ddp --nproc-per-node 2 --synthetic-samples 64 --batch-size 48 "
                                    "--max-steps 2 --threads 1 --results-dir '{}'", bin(), results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("each of the 2 ranks gets 32 of the 64 training samples") != std::string::npos);
  CHECK(test::entries(results) == 0);
}

TEST_CASE("samples per second count the rows each step had, the short last batch of an epoch too") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // 64 samples at batch 48: each epoch is a step of 48 rows and one of 16.
  auto r = test::run_command(fmt::format("'{}' run --synthetic-samples 64 --batch-size 48 --epochs 2 "
                                         "--timing-warmup-steps 0 --max-seq-length 32 --doc-stride 8 --threads 1 "
                                         "--run-name short --results-dir '{}'", bin(), results.string()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(read_file(results / "short" / "run.json"));
  auto& res = j["result"];
  CHECK(res["steps"] == 4);
  CHECK(res["timed_steps"] == 4);
  // 2 epochs of 64 samples, not 4 steps x 48.
  CHECK(res["samples_timed"] == 128);
  CHECK(res["samples_per_s"].get<double>() ==
        Approx(128.0 / res["train_time_s"].get<double>()).epsilon(1e-9));
  std::vector<int64_t> per_step;
  for (auto& s : j["steps"]) per_step.push_back(s["samples"].get<int64_t>());
  CHECK(per_step == std::vector<int64_t>{48, 16, 48, 16});
}

// Issue 22, class 2: what would fail at the end fails at the start.
TEST_CASE("evaluation data and outputs that cannot work fail before the first step, writing nothing") {
  test::TempDir dir;
  auto results = dir.path / "results";
  write_file_atomic(dir.path / "file", "x");
  write_file_atomic(dir.path / "empty.json", R"({"version": "1.1", "data": []})");
  write_file_atomic(dir.path / "broken.json", R"({"version": "1.1", "data": [)");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--eval-data " + (dir.path / "missing.json").string(), "--eval-data " + (dir.path / "missing.json").string() +
                                                                   ": no such file"},
      {"--eval-data " + (dir.path / "broken.json").string(), "not valid JSON"},
      // An empty evaluation set was scored EM 0 and F1 0.
      {"--eval-data " + (dir.path / "empty.json").string(), "no questions in it"},
      {"--save-checkpoint " + (dir.path / "file" / "model.safetensors").string(),
       "--save-checkpoint " + (dir.path / "file" / "model.safetensors").string() + ": " + (dir.path / "file").string() +
           " is not a folder"},
      {"--save-checkpoint " + (dir.path / "file").string(), "a file is there, where the checkpoint folder would go"},
      {"--dump-data " + dir.path.string(), "a folder is there, where the file would go"},
      // A stride the questions leave no room for failed in evaluation, after
      // training.
      {"--max-seq-length 64 --doc-stride 60 --eval-data " + test::squad_file("dev-v1.1-sample.json"),
       "doc_stride 60 must be smaller than the"},
  };
  for (auto& c : cases) {
    INFO(c.args);
    auto r = test::run_command(fmt::format("'{}' {} --vocab '{}' --cache-dir none --results-dir '{}' {}", bin(), kRun,
                                           test::vocab_file(), results.string(), c.args));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    CHECK(r.output.find(kTrainerStarted) == std::string::npos);
    CHECK(test::entries(results) == 0);
  }
  // The checks made no folder on their way: the three inputs, and the
  // results folder the run checked first (empty).
  CHECK(test::entries(dir.path) == 4);
}

// Issue 22, class 6: a vocabulary the model cannot embed, named up front.
TEST_CASE("a vocabulary larger than the model's embedding is refused before the first step") {
  test::TempDir dir;
  auto config = nlohmann::json::parse(read_file(test::test_data() / "bert-base-uncased" / "config.json"));
  config["hidden_size"] = 32;
  config["num_hidden_layers"] = 1;
  config["num_attention_heads"] = 2;
  config["intermediate_size"] = 64;
  config["vocab_size"] = 1000;
  write_file_atomic(dir.path / "small.json", config.dump());
  auto r = test::run_command(fmt::format("'{}' {} --model '{}' --train-data '{}' --vocab '{}' --cache-dir none "
                                         "--results-dir '{}'", bin(), kRun, (dir.path / "small.json").string(),
                                         test::squad_file("dev-v1.1-sample.json"), test::vocab_file(),
                                         (dir.path / "results").string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("has 30522 tokens, but the model's vocabulary holds 1000") != std::string::npos);
  CHECK(r.output.find(kTrainerStarted) == std::string::npos);
}

// Issue 22, class 11: the node's cores and memory.
TEST_CASE("ranks x threads beyond the cores are warned about and recorded; memory that cannot fit is refused") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // One core for 2 ranks of 2 threads each.
  auto r = test::run_command(fmt::format("env -u SLURM_CPUS_ON_NODE taskset -c 0 '{}' run --strategy ddp "
                                         "--nproc-per-node 2 --threads 2 "
                                         "--max-steps 1 --synthetic-samples 16 --max-seq-length 32 --doc-stride 8 "
                                         "--run-name shared --results-dir '{}'", bin(), results.string()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("--nproc-per-node 2: 2 rank(s) x 2 intra-op thread(s) = 4 threads on 1 usable core(s): the "
                      "cores are oversubscribed 4.0x") != std::string::npos);
  auto j = nlohmann::json::parse(read_file(results / "shared" / "run.json"));
  CHECK(j["result"]["cpu_cores"] == 1);
  CHECK(j["result"]["threads_per_rank"] == 2);
  // The report says so beside the figures.
  auto rep = test::run_command(fmt::format("'{}' report '{}'", bin(), results.string()));
  INFO(rep.output);
  CHECK(rep.output.find("shared: 2 rank(s) per node x 2 thread(s) on 1 core(s), oversubscribed 4.0x") !=
        std::string::npos);

  // bert-base under ddp holds 16 bytes per parameter on every rank: 4 ranks
  // cannot fit in 4 GiB, and are refused before any starts...
  const std::string four_gib = "HPCBENCH_INJECT=memory_bytes=4294967296";
  r = test::run_command(fmt::format("{} '{}' run --model bert-base-uncased --strategy ddp --nproc-per-node 4 "
                                    "--max-steps 1 --results-dir '{}'", four_gib, bin(), results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--nproc-per-node 4: 4 rank(s) need at least") != std::string::npos);
  CHECK(r.output.find("the memory model for ddp") != std::string::npos);
  CHECK(r.output.find("[launcher] rank 0 pid") == std::string::npos);
  // ...while zero stage 3 shards the same state 4 ways and passes the check.
  r = test::run_command(fmt::format("{} '{}' run --model bert-base-uncased --strategy zero --zero-stage 3 "
                                    "--nproc-per-node 4 --max-steps 1 --dry-run --results-dir '{}'",
                                    four_gib, bin(), results.string()));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("nothing was run") != std::string::npos);
}
