// PyTorch's DistributedDataParallel (ddp.h).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "strategies/ddp/buckets.h"
#include "strategies/ddp/options.h"
#include "specs/search.h"

namespace hpcbench::strategies::ddp {

namespace {

class DdpSpec final : public Spec {
 public:
  std::string name() const override { return "ddp"; }
  std::string summary() const override {
    return "DistributedDataParallel: bucketed all-reduce overlapped with backward";
  }
  Traits traits() const override {
    Traits t;
    t.needs_comm = true;
    return t;
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<DdpOptions>(); }
  // Shown on a CPU over Gloo ranks (tests/strategies/test_cuda_graph.cpp,
  // test_fused_parity.cpp); its buckets take the parameters' dtype.
  EngineSupport engine(const Options&) const override {
    return {Capability::yes(), Capability::yes(), Capability::yes()};
  }
  std::vector<std::string> always_shown() const override { return {"bucket_mb", "overlap"}; }
  std::vector<std::string> facts() const override { return {"buckets"}; }
  void validate(const Options& o, const std::string&) const override {
    auto mb = options_as<DdpOptions>(o).bucket_mb;
    if (!(mb > 0) || !std::isfinite(mb)) fail("--bucket-mb {}: must be positive", mb);
  }
  StateBytes memory(const Options&, const MemoryInputs& in) const override { return replicated_state(in); }
  void schedule(const Options& opts, const StepInputs& in, StepBuilder& b) const override {
    const auto& o = options_as<DdpOptions>(opts);
    const auto& l = *in.layout;
    const Group all{in.shape.nodes, in.shape.gpus_per_node};
    // The model's parameters are fp32: a bucket per cap of their gradients.
    std::vector<int64_t> bytes;
    for (auto n : l.param_numel) bytes.push_back(4 * n);
    const auto buckets = assign_buckets(bytes, std::vector<int>(bytes.size(), 0), o.bucket_mb);
    const double elem = in.param_grad_bytes;
    auto bucket_bytes = [&](const std::vector<size_t>& bucket) {
      double s = 0;
      for (auto k : bucket) s += elem * static_cast<double>(l.param_numel[k]);
      return s;
    };
    for (int m = 0; m < in.grad_accum; ++m) {
      b.compute(in.base.other_s, "other");
      b.compute(in.base.forward_s, "forward");
      if (m + 1 < in.grad_accum) {  // gradients accumulate locally until the last micro-step
        b.compute(in.base.backward_s, "backward");
        continue;
      }
      auto ready = ready_times(l, in.base.backward_s);
      double at = 0;  // backward issued so far
      for (auto& bucket : buckets) {
        double r = 0;
        for (auto k : bucket) r = std::max(r, ready[k]);
        if (o.overlap && r > at) {
          b.compute(r - at, "backward");
          at = r;
        }
        if (o.overlap) b.collective("all_reduce", bucket_bytes(bucket), all);
      }
      if (in.base.backward_s > at) b.compute(in.base.backward_s - at, "backward");
      if (!o.overlap)
        for (auto& bucket : buckets) b.collective("all_reduce", bucket_bytes(bucket), all);
      b.wait_all("wait");
    }
    b.compute(in.base.optimizer_s, "optimizer");
  }
  Advice advice(const Options& opts) const override {
    const auto& o = options_as<DdpOptions>(opts);
    return {o.overlap ? "tune --bucket-mb so that more of the reduction overlaps backward (larger buckets: fewer "
                        "collectives; smaller: the first starts earlier)"
                      : "overlap the reduction with backward again (drop --no-overlap)",
            "the optimizer runs on a full replica on every device: zero (--strategy zero --zero-stage 1) "
            "partitions it"};
  }
};

}  // namespace

const Spec& spec() {
  static const DdpSpec s;
  return s;
}

// PyTorch's default bucket and one a fifth and four times its size, with and
// without overlap.
std::vector<OptionSet> search_space(const SearchInputs&) {
  std::vector<OptionSet> sets;
  for (const char* mb : {"5", "25", "100"})
    for (const char* overlap : {"on", "off"}) sets.push_back({{"bucket_mb", mb}, {"overlap", overlap}});
  return sets;
}

}  // namespace hpcbench::strategies::ddp
