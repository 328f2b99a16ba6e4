// DeepSpeed's ZeRO on the sharded engine (lib/strategies/shard).
#include "core/error.h"
#include "strategies/zero/options.h"
#include "specs/search.h"

namespace hpcbench::strategies::zero {

namespace {

class ZeroSpec final : public shard::ShardedSpec {
 public:
  std::string name() const override { return "zero"; }
  std::string summary() const override {
    return "DeepSpeed ZeRO: stage 1 partitions Adam's states, 2 also the gradients, 3 also the parameters";
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<ZeroOptions>(); }
  std::vector<std::string> always_shown() const override { return {"stage"}; }
  void validate(const Options& opts, const std::string& precision) const override {
    const auto& o = options_as<ZeroOptions>(opts);
    if (o.stage < 1 || o.stage > 3) fail("--zero-stage {}: must be 1, 2 or 3", o.stage);
    o.shared.validate(precision);
  }
  StateBytes memory(const Options& o, const MemoryInputs& in) const override {
    return shard::plan_state(plan_of(options_as<ZeroOptions>(o)), in);
  }
  void schedule(const Options& o, const StepInputs& in, StepBuilder& b) const override {
    shard::plan_schedule(plan_of(options_as<ZeroOptions>(o)), in, b);
  }
  std::vector<std::string> showcase() const override { return {"zero", "zero:stage=3"}; }
  Advice advice(const Options& o) const override {
    return {shard::plan_exposed_advice(plan_of(options_as<ZeroOptions>(o))), ""};
  }
};

}  // namespace

const Spec& spec() {
  static const ZeroSpec s;
  return s;
}

// Prefetch only changes stage 3 (the only stage that gathers parameters);
// under mixed precision each also reducing in fp32.
std::vector<OptionSet> search_space(const SearchInputs& in) {
  std::vector<OptionSet> sets{{{"stage", "1"}}, {{"stage", "2"}}, {{"stage", "3"}}, {{"stage", "3"}, {"prefetch", "off"}}};
  return mixed_precision(in) ? also_with(sets, "reduce", {"fp32"}) : sets;
}

}  // namespace hpcbench::strategies::zero
