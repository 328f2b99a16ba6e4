// The one-device reference every speedup is measured against.
#include <fmt/format.h>

#include "specs/spec.h"
#include "specs/search.h"

namespace hpcbench::strategies::baseline {

namespace {

class BaselineSpec final : public Spec {
 public:
  std::string name() const override { return "baseline"; }
  std::string summary() const override { return "one device, no parallelism: the reference every speedup divides by"; }
  Traits traits() const override {
    Traits t;
    t.reference = true;
    return t;
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<NoOptions>(); }
  // Shown on a CPU (tests/strategies/test_cuda_graph.cpp, test_fused_parity.cpp)
  // and captured on an H100 (results/reference/gpu/H100-80GB-HBM3-20261127).
  EngineSupport engine(const Options&) const override {
    return {Capability::yes(), Capability::yes(), Capability::yes()};
  }
  std::string unsupported(const Options&, const Shape& shape) const override {
    return shape.world() == 1 ? "" : fmt::format("runs on one device (asked for {})", shape.world());
  }
  StateBytes memory(const Options&, const MemoryInputs& in) const override { return replicated_state(in); }
  void schedule(const Options&, const StepInputs& in, StepBuilder& b) const override {
    for (int m = 0; m < in.grad_accum; ++m) {
      b.compute(in.base.other_s, "other");
      b.compute(in.base.forward_s, "forward");
      b.compute(in.base.backward_s, "backward");
    }
    b.compute(in.base.optimizer_s, "optimizer");
  }
  std::vector<std::string> showcase() const override { return {}; }
};

}  // namespace

const Spec& spec() {
  static const BaselineSpec s;
  return s;
}

// Its defaults alone: it has nothing else to try.
std::vector<OptionSet> search_space(const SearchInputs&) { return {OptionSet{}}; }

}  // namespace hpcbench::strategies::baseline
