// The tensor strategy through the real binary: over 2 and 4 ranks, and as
// dp2 x tp2, the baseline's model with the same global batch (dropout off),
// to the ddp test's tolerance; its layout in the record; its all-reduces in
// the step timer's communication; and the layouts it refuses.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <fstream>

#include "cli_parity.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;
using test::parity::bin;
using test::parity::compare;
using test::parity::kCommon;
using test::parity::require_same;
using test::parity::run;

namespace {

// bert-tiny's shape with 4 heads (of 32 dimensions), so that it splits over
// 4 ranks; as cheap as bert-tiny.
fs::path four_head_model(const fs::path& dir) {
  auto folder = dir / "bert-tiny-4heads";
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << R"({"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 512})";
  return folder / "config.json";
}

std::string common_with(const fs::path& model) {
  std::string c = kCommon;
  const std::string tiny = "--model bert-tiny";
  c.replace(c.find(tiny), tiny.size(), "--model " + model.string());
  return c;
}

const nlohmann::json& result(const test::parity::Run& r) { return r.json["result"]; }

}  // namespace

TEST_CASE("tensor over 2 and 4 ranks and dp2 x tp2 equal the baseline with the same global batch") {
  test::TempDir dir;
  const auto common = common_with(four_head_model(dir.path));
  auto base4 = run(dir.path, "base4", "--strategy baseline --batch-size 4", common);
  auto base8 = run(dir.path, "base8", "--strategy baseline --batch-size 8", common);
  CHECK(compare(base4.params, base8.params).global_rel > 1e-4);  // the test can fail

  auto tp2 = run(dir.path, "tp2", "--strategy tensor --tp-size 2 --nproc-per-node 2 --batch-size 4", common);
  require_same(tp2, base4, "tensor, tp 2");
  CHECK(result(tp2)["strategy_options"] == "tp-size=2,dp-size=1,layout=tp2");
  CHECK(result(tp2)["global_batch"] == 4);
  // Four all-reduces per layer and micro-batch, timed as every collective.
  CHECK(result(tp2)["comm_ms"].get<double>() > 0);
  CHECK(result(tp2)["comm_exposed_ms"].get<double>() > 0);

  require_same(run(dir.path, "tp4", "--strategy tensor --tp-size 4 --nproc-per-node 4 --batch-size 4", common), base4,
               "tensor, tp 4");

  auto dp2tp2 =
      run(dir.path, "dp2tp2", "--strategy tensor --dp-size 2 --tp-size 2 --nproc-per-node 4 --batch-size 4", common);
  require_same(dp2tp2, base8, "tensor, dp 2 x tp 2");
  CHECK(result(dp2tp2)["strategy_options"] == "tp-size=2,dp-size=2,layout=dp2-tp2");
  CHECK(result(dp2tp2)["global_batch"] == 8);

  // Accumulation: the group's gradients summed over micro-steps, reduced
  // across groups once.
  require_same(run(dir.path, "dp2tp2-acc",
                   "--strategy tensor --dp-size 2 --tp-size 2 --nproc-per-node 4 --batch-size 2 --grad-accum 2", common),
               run(dir.path, "base-acc", "--strategy baseline --batch-size 4 --grad-accum 2", common),
               "tensor, dp 2 x tp 2, accumulation 2");
}

TEST_CASE("tensor refuses layouts that cannot run, naming the flag, before writing anything") {
  test::TempDir dir;
  auto fails = [&](const std::string& args, const std::string& common, const std::vector<std::string>& says) {
    auto results = dir.path / "results";
    auto r = test::run_command(bin() + " run" + common + " --max-steps 2 --batch-size 2 " + args + " --results-dir " +
                               results.string());
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    for (auto& s : says) CHECK(r.output.find(s) != std::string::npos);
    CHECK(test::entries(results) == 0);
  };
  // bert-tiny has 2 heads.
  fails("--strategy tensor --tp-size 4 --nproc-per-node 4", kCommon, {"--tp-size 4", "bert-tiny", "2 attention heads"});
  fails("--strategy tensor --tp-size 2 --dp-size 3 --nproc-per-node 4", kCommon,
        {"--dp-size 3", "--tp-size 2", "4 ranks"});
  fails("--strategy tensor --tp-size 3 --nproc-per-node 4", kCommon, {"--tp-size 3: does not divide the job's 4 ranks"});
}
