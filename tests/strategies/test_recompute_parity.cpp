// --activation-checkpointing under every strategy through the binary: the
// recomputed forward changes what is kept for backward, not the arithmetic,
// so each run equals the baseline without it (dropout off, the same global
// batch) to the ddp test's tolerance; the record names it and counts the
// recomputed forward as hardware FLOPs beside the model's.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <fstream>

#include "cli_parity.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;
using test::parity::kCommon;
using test::parity::require_same;
using test::parity::run;

TEST_CASE("every strategy with activation checkpointing equals the baseline without it") {
  test::TempDir dir;
  // Four heads (bert-tiny's shape otherwise), so that tensor splits them.
  auto folder = dir.path / "bert-tiny-4heads";
  fs::create_directories(folder);
  std::ofstream(folder / "config.json") << R"({"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 512})";
  std::string common = kCommon;
  common.replace(common.find("--model bert-tiny"), 17, "--model " + (folder / "config.json").string());

  auto base = run(dir.path, "base", "--strategy baseline --batch-size 4", common);
  const std::string ac = " --activation-checkpointing";
  auto base_ac = run(dir.path, "base-ac", "--strategy baseline --batch-size 4" + ac, common);
  require_same(base_ac, base, "baseline with recomputation");
  const auto& r = base_ac.json["result"];
  CHECK(r["activation_checkpointing"] == 1);
  CHECK(base.json["result"]["activation_checkpointing"] == 0);
  CHECK(base.json["result"]["hardware_flops_per_sample"] == base.json["result"]["flops_per_sample"]);
  CHECK(r["hardware_flops_per_sample"].get<double>() > r["flops_per_sample"].get<double>());
  CHECK(r["flops_per_sample"] == base.json["result"]["flops_per_sample"]);

  // Two devices and a global batch of 4: two replicas of 2, or one
  // tensor-parallel group reading 4.
  const std::string two = " --nproc-per-node 2";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"dp", "--strategy dp --dp-replicas 2 --batch-size 2"},
      {"ddp", "--strategy ddp --batch-size 2" + two},
      {"zero1", "--strategy zero --zero-stage 1 --batch-size 2" + two},
      {"zero3", "--strategy zero --zero-stage 3 --batch-size 2" + two},
      {"fsdp", "--strategy fsdp --batch-size 2" + two},
      {"tp2", "--strategy tensor --tp-size 2 --batch-size 4" + two}};
  for (auto& [name, args] : runs)
    require_same(run(dir.path, "ac-" + name, args + ac, common), base, name + " with recomputation");
}
