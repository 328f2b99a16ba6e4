// PyTorch's DataParallel: one process drives a node's devices (dp.h).
#include <fmt/format.h>

#include "core/error.h"
#include "strategies/dp/options.h"
#include "specs/search.h"

namespace hpcbench::strategies::dp {

namespace {

class DpSpec final : public Spec {
 public:
  std::string name() const override { return "dp"; }
  std::string summary() const override {
    return "DataParallel: one process replicates the model over its devices every step";
  }
  Traits traits() const override {
    Traits t;
    t.devices_option = "replicas";
    return t;
  }
  EngineSupport engine(const Options&) const override {
    return EngineSupport::unfused(
        Capability::no("one process drives several devices (--replicas), while a CUDA graph captures the work of one "
                       "device, and dp's copies between the replicas are timed on host clocks inside the step"),
        "one process drives its replicas from copies of the model that it makes itself, which are neither fused "
        "nor bf16-resident; use --strategy ddp");
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<DpOptions>(); }
  std::vector<std::string> always_shown() const override { return {"replicas"}; }
  std::vector<std::string> facts() const override { return {"devices"}; }
  void validate(const Options& o, const std::string&) const override {
    auto n = options_as<DpOptions>(o).replicas;
    if (n < 0) fail("--dp-replicas {}: must be at least 1 (0: every device)", n);
  }
  std::string unsupported(const Options&, const Shape& shape) const override {
    return shape.nodes == 1 ? ""
                            : fmt::format("one process drives one node's devices (asked for {} nodes)", shape.nodes);
  }
  StateBytes memory(const Options&, const MemoryInputs& in) const override { return replicated_state(in); }
  // The replicas get the parameters from the first device (broadcast), the
  // micro-batch is scattered, their gradients are summed onto the first
  // device (reduce: the cost of a broadcast), the optimizer runs there alone.
  void schedule(const Options&, const StepInputs& in, StepBuilder& b) const override {
    const Group all{in.shape.nodes, in.shape.gpus_per_node};
    const double params = static_cast<double>(in.layout->parameters);
    for (int m = 0; m < in.grad_accum; ++m) {
      b.collective("broadcast", 4 * params, all);
      b.wait_all("wait");
      b.compute(in.base.other_s, "other");
      b.compute(in.base.forward_s, "forward");
      b.compute(in.base.backward_s, "backward");
      b.collective("reduce", 4 * params, all);
      b.wait_all("wait");
    }
    b.compute(in.base.optimizer_s, "optimizer");
  }
  std::vector<std::string> showcase() const override { return {}; }
  Advice advice(const Options&) const override {
    return {"dp copies parameters and gradients between replicas every step, all of it exposed; ddp "
            "(--strategy ddp) overlaps the reduction with backward",
            "the optimizer runs on a full replica on every device: zero (--strategy zero --zero-stage 1) "
            "partitions it"};
  }
};

}  // namespace

const Spec& spec() {
  static const DpSpec s;
  return s;
}

// Its defaults alone: it has nothing else to try.
std::vector<OptionSet> search_space(const SearchInputs&) { return {OptionSet{}}; }

}  // namespace hpcbench::strategies::dp
