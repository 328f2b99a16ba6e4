// The one-GPU validation's paths, on CPU: --keep-collectives (a strategy at
// world size 1 runs its collectives for real), --backend and
// --allow-shared-gpu (several ranks on one device over Gloo), through the
// real binary.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

nlohmann::json run_json(const fs::path& folder) { return nlohmann::json::parse(read_file(folder / "run.json")); }

std::vector<double> step_losses(const nlohmann::json& j) {
  std::vector<double> out;
  for (auto& s : j["steps"]) out.push_back(s["loss"].get<double>());
  return out;
}

const std::string kTiny =
    " --model bert-tiny --synthetic-samples 64 --batch-size 8 --max-steps 4 --timing-warmup-steps 1 --dropout 0"
    " --precision fp32 --device cpu --threads 1 --sample-ms 0";

}  // namespace

TEST_CASE("flags that cannot work are refused before anything starts, saying why") {
  test::TempDir dir;
  auto results = (dir.path / "results").string();
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--backend mpi", "--backend mpi: unknown"},
      {"--strategy ddp --backend nccl --device cpu", "--backend nccl needs --device cuda"},
      {"--strategy ddp --nproc-per-node 2 --allow-shared-gpu", "--allow-shared-gpu needs --backend gloo"},
      {"--strategy ddp --nproc-per-node 2 --allow-shared-gpu --backend nccl", "NCCL refuses two ranks on one GPU"},
      {"--keep-collectives", "--keep-collectives applies to strategies that communicate"},
      {"--strategy dp --keep-collectives", "--keep-collectives applies to strategies that communicate"},
  };
  for (auto& c : cases) {
    INFO(c.args);
    auto r = test::run_command(bin() + " run --max-steps 2 --results-dir " + results + " " + c.args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    CHECK(test::entries(results) == 0);
  }
}

TEST_CASE("--keep-collectives: collectives run and are timed at world size 1, the losses do not change") {
  test::TempDir dir;
  auto results = dir.path / "results";
  for (std::string strategy : {"ddp", "zero --zero-stage 3", "fsdp --sharding full"}) {
    INFO(strategy);
    std::string name = strategy.substr(0, strategy.find(' '));
    auto off = test::run_command(bin() + " run" + kTiny + " --strategy " + strategy + " --run-name " + name +
                                 "-elided --results-dir " + results.string());
    INFO(off.output);
    REQUIRE(off.exit_code == 0);
    auto on = test::run_command(bin() + " run" + kTiny + " --strategy " + strategy + " --keep-collectives --run-name " +
                                name + "-kept --results-dir " + results.string());
    INFO(on.output);
    REQUIRE(on.exit_code == 0);
    auto a = run_json(results / (name + "-elided")), b = run_json(results / (name + "-kept"));
    // Elided: no collective ran, so none was timed.
    CHECK(a["result"]["comm_ms"].get<double>() == 0.0);
    CHECK(b["result"]["comm_ms"].get<double>() > 0.0);
    // A sum over one rank is the identity and Gloo copies bytes exactly:
    // the same losses bit for bit.
    CHECK(step_losses(a) == step_losses(b));
  }
}

TEST_CASE("--backend gloo --allow-shared-gpu: ranks share devices and train the baseline's model") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto base = test::run_command(bin() + " run" + kTiny + " --run-name base --results-dir " + results.string());
  INFO(base.output);
  REQUIRE(base.exit_code == 0);
  auto shared = test::run_command(bin() + " run" + std::string(kTiny).replace(kTiny.find("--batch-size 8"), 14,
                                                                              "--batch-size 4") +
                                  " --strategy ddp --nproc-per-node 2 --backend gloo --allow-shared-gpu"
                                  " --run-name shared --results-dir " + results.string());
  INFO(shared.output);
  REQUIRE(shared.exit_code == 0);
  CHECK(shared.output.find("backend gloo") != std::string::npos);
  auto a = step_losses(run_json(results / "base")), b = step_losses(run_json(results / "shared"));
  REQUIRE(a.size() == b.size());
  // The tolerance of the ddp parity tests (tests/strategies): 2 x 4 rows
  // summed over ranks against 8 rows on one, rounding only.
  for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-5 * std::abs(a[i]));
}
