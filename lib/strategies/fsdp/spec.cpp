// PyTorch's FSDP on the sharded engine (lib/strategies/shard).
#include <fmt/format.h>

#include "core/error.h"
#include "strategies/fsdp/options.h"
#include "specs/search.h"

namespace hpcbench::strategies::fsdp {

namespace {

class FsdpSpec final : public shard::ShardedSpec {
 public:
  std::string name() const override { return "fsdp"; }
  std::string summary() const override {
    return "PyTorch FSDP, one unit per encoder layer, the embeddings and the head";
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<FsdpOptions>(); }
  std::vector<std::string> always_shown() const override { return {"sharding"}; }
  void validate(const Options& opts, const std::string& precision) const override {
    const auto& o = options_as<FsdpOptions>(opts);
    if (o.sharding != "full" && o.sharding != "grad-op" && o.sharding != "hybrid")
      fail("--sharding {}: must be full, grad-op or hybrid", o.sharding);
    if (o.shard_group < 0) fail("--shard-group-size {}: must be positive", o.shard_group);
    if (o.shard_group > 0 && o.sharding != "hybrid")
      fail("--shard-group-size {} applies to --sharding hybrid only (not {})", o.shard_group, o.sharding);
    o.shared.validate(precision);
  }
  std::string unsupported(const Options& opts, const Shape& shape) const override {
    const auto& o = options_as<FsdpOptions>(opts);
    if (o.sharding == "hybrid" && o.shard_group > 0 && shape.world() % o.shard_group != 0)
      return fmt::format("--shard-group-size {}: {} ranks do not split into groups of {}; use a divisor of the "
                         "world size", o.shard_group, shape.world(), o.shard_group);
    return "";
  }
  StateBytes memory(const Options& o, const MemoryInputs& in) const override {
    return shard::plan_state(plan_of(options_as<FsdpOptions>(o)), in);
  }
  void schedule(const Options& o, const StepInputs& in, StepBuilder& b) const override {
    shard::plan_schedule(plan_of(options_as<FsdpOptions>(o)), in, b);
  }
  Advice advice(const Options& o) const override {
    return {shard::plan_exposed_advice(plan_of(options_as<FsdpOptions>(o))), ""};
  }
};

}  // namespace

const Spec& spec() {
  static const FsdpSpec s;
  return s;
}

// Hybrid on one node is full sharding over the node: tried across nodes
// only; under mixed precision each also reducing in fp32.
std::vector<OptionSet> search_space(const SearchInputs& in) {
  std::vector<OptionSet> sets;
  for (const std::string sharding : {"full", "grad-op", "hybrid"}) {
    if (sharding == "hybrid" && in.shape.nodes < 2) continue;
    for (const char* prefetch : {"on", "off"}) sets.push_back({{"sharding", sharding}, {"prefetch", prefetch}});
  }
  return mixed_precision(in) ? also_with(sets, "reduce", {"fp32"}) : sets;
}

}  // namespace hpcbench::strategies::fsdp
