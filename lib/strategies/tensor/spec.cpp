// Megatron-LM's tensor parallelism, composed with data parallelism (tensor.h).
#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "strategies/tensor/options.h"
#include "specs/search.h"

namespace hpcbench::strategies::tensor {

namespace {

// BERT's units are the embeddings, the encoder layers and the QA head, whose
// 2·h + 2 elements give the hidden size.
int64_t hidden_of(const std::vector<int64_t>& units) {
  if (units.size() < 3) fail("internal: a tensor-parallel model of {} units", units.size());
  return (units.back() - 2) / 2;
}

// What one rank of a `tp` group holds of an encoder layer of `numel`
// elements: the split weights and biases / tp, the two row-parallel biases
// and two LayerNorms (6·h) whole (model_shape.h's layer_params_per_rank).
int64_t layer_per_rank(int64_t numel, int64_t hidden, int tp) { return (numel - 6 * hidden) / tp + 6 * hidden; }

int64_t shard_params(const std::vector<int64_t>& units, int tp) {
  const int64_t h = hidden_of(units);
  int64_t n = units.front() + units.back();
  for (size_t u = 1; u + 1 < units.size(); ++u) n += layer_per_rank(units[u], h, tp);
  return n;
}

Mesh mesh_of(const Options& opts, const Shape& shape) {
  return tensor_mesh(options_as<TensorOptions>(opts), shape.world(), shape.gpus_per_node);
}

class TensorSpec final : public Spec {
 public:
  std::string name() const override { return "tensor"; }
  std::string summary() const override {
    return "Megatron-LM tensor parallelism: attention heads and the MLP split over --tp-size ranks of a node, "
           "data-parallel across groups (--dp-size)";
  }
  // Its step is graph-ready (tests/strategies/test_cuda_graph.cpp); its
  // layers take the fused model's packed QKV (a rank's heads of each third)
  // and kernels, and its shard's weights resident in bf16 with fp32
  // masters (test_tensor_layers.cpp, test_fused_parity.cpp).
  EngineSupport engine(const Options&) const override {
    return {Capability::yes(), Capability::yes(), Capability::yes()};
  }
  Traits traits() const override {
    Traits t;
    t.needs_comm = true;
    return t;
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<TensorOptions>(); }
  std::vector<std::string> always_shown() const override { return {"tp-size", "dp-size"}; }
  std::vector<std::string> facts() const override { return {"layout"}; }
  void validate(const Options& opts, const std::string&) const override {
    const auto& o = options_as<TensorOptions>(opts);
    if (o.tp_size < 0) fail("--tp-size {}: must be at least 1 (or 0: the ranks of a node)", o.tp_size);
    if (o.dp_size < 0) fail("--dp-size {}: must be at least 1 (or 0: the ranks --tp-size leaves)", o.dp_size);
  }
  std::string unsupported(const Options& opts, const Shape& shape) const override {
    try {
      mesh_of(opts, shape);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  std::string unsupported_model(const Options& opts, const Shape& shape, const ModelShape& m) const override {
    int tp = 1;
    try {
      tp = mesh_of(opts, shape).tp();
    } catch (const UserError&) {
      return "";  // unsupported() says why
    }
    if (m.heads % tp != 0)
      return fmt::format("--tp-size {}: the model has {} attention heads, which do not divide among {} "
                         "tensor-parallel ranks (each rank computes whole heads; choose a --tp-size that divides {})",
                         tp, m.heads, tp, m.heads);
    if (m.intermediate % tp != 0)
      return fmt::format("--tp-size {}: the model's MLP of {} columns does not divide among {} tensor-parallel ranks",
                         tp, m.intermediate, tp);
    return "";
  }
  int data_parallel_size(const Options& opts, const Shape& shape) const override { return mesh_of(opts, shape).dp(); }
  // Each rank steps its shard: 16 bytes a parameter it holds, with
  // bf16-resident weights too (bf16 weights and gradients, fp32 masters and
  // Adam's moments: the fused master-weight AdamW keeps no fp32 gradient
  // copies, its group-wide norm all-reduced on the device).
  StateBytes memory(const Options& opts, const MemoryInputs& in) const override {
    const int64_t shard = shard_params(in.units, mesh_of(opts, in.shape).tp());
    return {replicated_state_bytes(shard, in.resident, in.compute_bytes), 0};
  }
  // Per micro-batch and layer, Megatron's g all-reduces the attention's and
  // the MLP's partial outputs forward, f their inputs' gradients backward;
  // each result is the next operation's input, so every one is exposed.
  // The embeddings and the head run whole on every rank. Across groups the
  // shard's gradients are all-reduced once, after the last micro-step.
  void schedule(const Options& opts, const StepInputs& in, StepBuilder& b) const override {
    const auto mesh = mesh_of(opts, in.shape);
    const auto& l = *in.layout;
    const int tp = mesh.tp(), dp = mesh.dp();
    const size_t units = l.unit_numel.size();
    const int64_t h = hidden_of(l.unit_numel);
    const double activation = static_cast<double>(in.rows * in.seq * h) * in.compute_bytes;
    const Group tp_group{1, tp};
    auto block = [&](double s, const std::string& kind) {
      b.compute(s, kind);
      if (tp == 1) return;
      b.collective("all_reduce", activation, tp_group);
      b.wait_all("wait");
    };
    for (int m = 0; m < in.grad_accum; ++m) {
      b.compute(in.base.other_s, "other");
      b.compute(in.base.forward_s * l.unit_share.front(), "forward");
      for (size_t u = 1; u + 1 < units; ++u)
        for (int half = 0; half < 2; ++half) block(in.base.forward_s * l.unit_share[u] / (2.0 * tp), "forward");
      b.compute(in.base.forward_s * l.unit_share.back(), "forward");
      b.compute(in.base.backward_s * l.unit_share.back(), "backward");
      for (size_t u = units - 1; u-- > 1;)
        for (int half = 0; half < 2; ++half) block(in.base.backward_s * l.unit_share[u] / (2.0 * tp), "backward");
      b.compute(in.base.backward_s * l.unit_share.front(), "backward");
    }
    const double shard = static_cast<double>(shard_params(l.unit_numel, tp));
    if (dp > 1) {
      const int per_node = std::max(1, std::min(dp, in.shape.gpus_per_node / tp));
      b.collective("all_reduce", shard * in.param_grad_bytes, Group{dp / per_node, per_node, tp});
      b.wait_all("wait");
    }
    double whole = 0;
    for (auto n : l.unit_numel) whole += static_cast<double>(n);
    b.compute(in.base.optimizer_s * shard / whole, "optimizer");
  }
  std::vector<std::string> showcase() const override { return {"tensor:tp-size=2", "tensor"}; }
  Advice advice(const Options&) const override {
    return {"every tensor-parallel all-reduce is exposed (its result is the next layer's input): keep --tp-size "
            "within a node's fastest links, or use fewer tensor-parallel ranks and more data-parallel ones "
            "(--dp-size)",
            ""};
  }
};

}  // namespace

const Spec& spec() {
  static const TensorSpec s;
  return s;
}

// Every tensor-parallel size of two or more that divides the job; the
// model's checks (heads, MLP columns) refuse the rest.
std::vector<OptionSet> search_space(const SearchInputs& in) {
  std::vector<OptionSet> sets;
  for (int tp = 2; tp <= in.shape.world(); ++tp)
    if (in.shape.world() % tp == 0) sets.push_back({{"tp-size", std::to_string(tp)}});
  return sets;
}

}  // namespace hpcbench::strategies::tensor
