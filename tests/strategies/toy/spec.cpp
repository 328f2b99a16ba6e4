#include "core/error.h"
#include "toy/options.h"

namespace hpcbench::strategies::toy {

namespace {

class ToySpec final : public Spec {
 public:
  std::string name() const override { return "toy"; }
  std::string summary() const override { return "a test's strategy: replicas, one flat all-reduce after backward"; }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<ToyOptions>(); }
  std::vector<std::string> always_shown() const override { return {"chunks"}; }
  void validate(const Options& o, const std::string&) const override {
    if (options_as<ToyOptions>(o).chunks < 1) fail("--toy-chunks {}: must be at least 1", options_as<ToyOptions>(o).chunks);
  }
  StateBytes memory(const Options&, const MemoryInputs& in) const override { return replicated_state(in); }
  void schedule(const Options& opts, const StepInputs& in, StepBuilder& b) const override {
    const auto chunks = options_as<ToyOptions>(opts).chunks;
    const Group all{in.shape.nodes, in.shape.gpus_per_node};
    for (int m = 0; m < in.grad_accum; ++m) {
      b.compute(in.base.other_s, "other");
      b.compute(in.base.forward_s, "forward");
      b.compute(in.base.backward_s, "backward");
    }
    const double bytes = in.param_grad_bytes * static_cast<double>(in.layout->parameters);
    for (int64_t c = 0; c < chunks; ++c) b.collective("all_reduce", bytes / static_cast<double>(chunks), all);
    b.wait_all("wait");
    b.compute(in.base.optimizer_s, "optimizer");
  }
  Advice advice(const Options&) const override {
    return {"the toy strategy's all-reduces start after backward: nothing hides them", ""};
  }
};

}  // namespace

const Spec& spec() {
  static const ToySpec s;
  return s;
}

}  // namespace hpcbench::strategies::toy
