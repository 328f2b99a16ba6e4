// `hpcbench run --tunableop` through the real binary on the CPU: TunableOp
// chooses among CUDA GEMM implementations, so on a CPU nothing is tuned, the
// run goes on, and run.json says so and why (no results file is written);
// what would make the tuning unsafe or its record wrong is refused before
// anything runs, naming the flag or the variable: a timed step 1 (where the
// tuning happens), and PyTorch's own PYTORCH_TUNABLEOP_* variables, which
// override the run's settings. The GPU side (tuning in step 1, the file in
// the results folder) is tools/gpu/validate.sh profile's lever `tunableop`.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " run --model bert-tiny --device cpu --synthetic-samples 16 --max-seq-length 32 --doc-stride 8"
    " --max-query-length 16 --batch-size 4 --max-steps 3 --threads 1 --cache-dir none"
    " --sample-ms 0 --tensorboard off";

std::string bin() { return test::hpcbench_bin().string(); }

}  // namespace

TEST_CASE("--tunableop on a CPU: nothing tuned, the run goes on, and run.json says why") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command("env -u PYTORCH_TUNABLEOP_ENABLED -u PYTORCH_TUNABLEOP_TUNING " + bin() + kTiny +
                             " --tunableop --timing-warmup-steps 1 --run-name tuned --results-dir " + results.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("--tunableop: the device is cpu"));
  auto run = nlohmann::json::parse(test::slurp(results / "tuned" / "run.json"));
  CHECK(run["config"]["train.tunableop"] == "on");
  REQUIRE(run.contains("tunableop"));
  CHECK(run["tunableop"]["requested"] == true);
  CHECK(run["tunableop"]["on"] == false);
  CHECK_THAT(run["tunableop"]["reason"].get<std::string>(), Catch::Contains("the device is cpu") &&
                                                                Catch::Contains("nothing was tuned"));
  CHECK_FALSE(fs::exists(results / "tuned" / "tunableop_results.csv"));

  auto plain = test::run_command(bin() + kTiny + " --timing-warmup-steps 1 --run-name plain --results-dir " + results.string());
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  auto p = nlohmann::json::parse(test::slurp(results / "plain" / "run.json"));
  CHECK(p["config"]["train.tunableop"] == "off");
  CHECK_FALSE(p.contains("tunableop"));
}

TEST_CASE("--tunableop with a timed step 1 or PyTorch's own variables is refused before anything runs") {
  test::TempDir dir;
  auto results = dir.path / "results";
  for (const std::string flags : {"", "--dry-run"}) {
    INFO(flags);
    auto r = test::run_command(bin() + kTiny + " --tunableop --timing-warmup-steps 0 --run-name bad " + flags +
                               " --results-dir " + results.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("--tunableop with --timing-warmup-steps 0") &&
                             Catch::Contains("tuned in step 1"));
    CHECK_FALSE(fs::exists(results / "bad"));
    for (const std::string var : {"PYTORCH_TUNABLEOP_TUNING=0", "PYTORCH_TUNABLEOP_FILENAME=x.csv"}) {
      INFO(var);
      auto e = test::run_command(var + " " + bin() + kTiny + " --tunableop --timing-warmup-steps 1 --run-name bad " + flags +
                                 " --results-dir " + results.string());
      INFO(e.output);
      CHECK(e.exit_code == 2);
      CHECK_THAT(e.output, Catch::Contains("--tunableop with " + var.substr(0, var.find('='))) &&
                               Catch::Contains("unset it"));
      CHECK_FALSE(fs::exists(results / "bad"));
    }
  }
}
