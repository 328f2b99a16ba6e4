#include "core/engine_policy.h"

namespace hpcbench {

std::string EnginePolicy::name() const {
  if (graph() && fused_model()) return "graph+fused";
  if (graph()) return "graph";
  if (fused_model()) return "fused";
  return "eager";
}

EnginePolicy::Weights EnginePolicy::fused_weights(const std::string& precision) {
  return precision == "bf16" ? Weights::Resident : Weights::Fp32;
}

EnginePolicy EnginePolicy::recorded(const std::string& precision, bool fused, const std::string& name) {
  EnginePolicy e;
  e.precision = precision.empty() ? "fp32" : precision;
  if (fused || name.find("fused") != std::string::npos) {
    e.kernels = Kernels::Fused;
    e.qkv = Qkv::Packed;
    e.weights = fused_weights(e.precision);
  }
  if (name.starts_with("graph")) e.step = Step::Graph;
  e.reason = "as recorded";
  return e;
}

}  // namespace hpcbench
