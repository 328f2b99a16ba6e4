// `hpcbench run --deterministic` through the real binary on the CPU (issue
// 42): the mode is in force (read back from ATen into run.json, not echoed
// from the flag), two runs give the same losses bit for bit, and so does the
// graph-ready step against eager, the CPU rehearsal of the GPU phase
// (tools/gpu/validate.sh deterministic). A cuBLAS setting that would undo it
// is refused before anything runs.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <vector>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

// Two intra-op threads, so that the CPU kernels' parallel reductions run;
// dropout on (the model's 0.1), drawn from the seeded generator.
const std::string kTiny =
    " run --model bert-tiny --device cpu --synthetic-samples 32 --max-seq-length 32 --doc-stride 8"
    " --max-query-length 16 --batch-size 4 --max-steps 6 --timing-warmup-steps 1 --threads 2 --cache-dir none"
    " --sample-ms 0 --tensorboard off --log-every 1";

std::string bin() { return test::hpcbench_bin().string(); }

struct Ran {
  nlohmann::json run;
  std::vector<double> losses;
};

Ran run(const fs::path& results, const std::string& name, const std::string& flags, const std::string& env = "") {
  auto r = test::run_command(env + " " + bin() + kTiny + " --run-name " + name + " --results-dir " +
                             results.string() + " " + flags);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Ran out;
  out.run = nlohmann::json::parse(test::slurp(results / name / "run.json"));
  for (const auto& s : out.run.at("steps")) out.losses.push_back(s.at("loss").get<double>());
  REQUIRE(out.losses.size() == 6);
  return out;
}

}  // namespace

TEST_CASE("--deterministic is in force and recorded, and two runs give the same losses bit for bit") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // An empty CUBLAS_WORKSPACE_CONFIG in the caller's environment is unset.
  const std::string unset = "env -u CUBLAS_WORKSPACE_CONFIG";
  auto a = run(results, "det-a", "--deterministic", unset);
  auto b = run(results, "det-b", "--deterministic", unset);
  CHECK(a.run["config"]["train.deterministic"] == "on");
  const auto& det = a.run["deterministic"];
  CHECK(det["algorithms"] == true);
  CHECK(det["warn_only"] == false);
  CHECK(det["cudnn_deterministic"] == true);
  CHECK(det["cudnn_benchmark"] == false);
  CHECK(det["cublas_workspace_config"] == ":4096:8");
  for (size_t i = 0; i < a.losses.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(a.losses[i] == b.losses[i]);  // exact: the same bits
  }
  // The graph-ready step (on a CPU: not captured) against eager: the same
  // kernels in the same order, so the same bits.
  auto g = run(results, "det-graph", "--deterministic --cuda-graph", unset);
  for (size_t i = 0; i < a.losses.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(g.losses[i] == a.losses[i]);
  }
  // Without the flag the record says the mode was off: it is read back, not
  // the flag echoed.
  auto off = run(results, "plain", "", unset);
  CHECK(off.run["config"]["train.deterministic"] == "off");
  CHECK(off.run["deterministic"]["algorithms"] == false);
  CHECK(off.run["deterministic"]["cublas_workspace_config"] == "");
  // A user's reproducible :16:8 stands.
  auto small = run(results, "det-16", "--deterministic", "CUBLAS_WORKSPACE_CONFIG=:16:8");
  CHECK(small.run["deterministic"]["cublas_workspace_config"] == ":16:8");
}

TEST_CASE("--deterministic with a cuBLAS workspace setting that is not reproducible is refused before anything runs") {
  test::TempDir dir;
  auto results = dir.path / "results";
  for (const std::string flags : {"", "--dry-run"}) {
    INFO(flags);
    auto r = test::run_command("CUBLAS_WORKSPACE_CONFIG=:0:0 " + bin() + kTiny + " --deterministic --run-name bad " +
                               flags + " --results-dir " + results.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("--deterministic with CUBLAS_WORKSPACE_CONFIG=:0:0") &&
                             Catch::Contains(":4096:8"));
    CHECK_FALSE(fs::exists(results / "bad"));
  }
  // A value that is not text is named printably, not echoed as raw bytes.
  auto r = test::run_command("CUBLAS_WORKSPACE_CONFIG=$(printf '\\377\\033[2J') " + bin() + kTiny +
                             " --deterministic --run-name bad --results-dir " + results.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--deterministic with CUBLAS_WORKSPACE_CONFIG="));
  CHECK(r.output.find('\xff') == std::string::npos);
  CHECK(r.output.find('\x1b') == std::string::npos);
  CHECK_FALSE(fs::exists(results / "bad"));
}
