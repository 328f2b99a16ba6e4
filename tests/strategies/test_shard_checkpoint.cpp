// The sharded engine's gather for a checkpoint leaves the model as it found
// it: under zero 3 and fsdp full (partitioned parameters) in fp32 and bf16,
// on 1 and 2 ranks, --save-initial-checkpoint writes rank 0's initial fp32
// weights (the baseline's initial checkpoint, bit for bit) and the run then
// trains exactly as one that saved nothing.
#include <string>

#include "cli_parity.h"

using namespace hpcbench;

namespace {

struct Saved {
  test::parity::Run run;
  std::map<std::string, at::Tensor> initial;
};

Saved run_saving(const test::TempDir& dir, const std::string& name, const std::string& args, bool save_initial) {
  auto initial = dir.path / (name + "-initial.safetensors");
  Saved out;
  out.run = test::parity::run(dir.path, name, args + (save_initial ? " --save-initial-checkpoint " + initial.string() : ""));
  if (save_initial) out.initial = model::read_safetensors(initial);
  return out;
}

}  // namespace

TEST_CASE("a sharded run's initial checkpoint is rank 0's initial weights and changes nothing after it") {
  test::TempDir dir;
  auto base = run_saving(dir, "baseline", "--batch-size 4", true);
  for (std::string precision : {"fp32", "bf16"})
    for (std::string strategy : {"--strategy zero --zero-stage 3", "--strategy fsdp --sharding full"})
      for (int ranks : {1, 2}) {
        const std::string args = strategy + " --precision " + precision + " --nproc-per-node " +
                                 std::to_string(ranks) + " --batch-size " + (ranks == 1 ? "4" : "2");
        INFO(args);
        const std::string name = (strategy.find("zero") != std::string::npos ? "zero3-" : "fsdp-") + precision + "-" +
                                 std::to_string(ranks);
        auto saved = run_saving(dir, name + "-saved", args, true);
        auto plain = run_saving(dir, name + "-plain", args, false);
        // The masters in fp32, as rank 0 drew them.
        REQUIRE(saved.initial.size() == base.initial.size());
        for (auto& [key, t] : base.initial) {
          INFO(key);
          REQUIRE(saved.initial.count(key));
          CHECK(saved.initial.at(key).scalar_type() == at::kFloat);
          CHECK(at::equal(saved.initial.at(key), t));
        }
        // The model as it was found: the same steps after the save.
        REQUIRE(saved.run.losses.size() == plain.run.losses.size());
        for (size_t i = 0; i < plain.run.losses.size(); ++i) CHECK(saved.run.losses[i] == plain.run.losses[i]);
        auto d = test::parity::compare(saved.run.params, plain.run.params);
        INFO("worst tensor " << d.worst_tensor);
        CHECK(d.global_rel == 0.0);
      }
}
