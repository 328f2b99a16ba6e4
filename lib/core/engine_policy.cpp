#include "core/engine_policy.h"

namespace hpcbench {

std::string EnginePolicy::name() const {
  if (graph() && fused_model()) return "graph+fused";
  if (graph()) return "graph";
  if (fused_model()) return "fused";
  return "eager";
}

std::vector<std::string> EnginePolicy::flags() const {
  std::vector<std::string> out;
  if (graph()) out.push_back("--cuda-graph");
  if (fused_model()) {
    out.push_back("--fused");
    if (residual == Residual::Added) out.push_back("--no-residual-fold");
    if (!embedding_kernel) out.push_back("--no-fused-embedding");
    if (!adamw_kernel) out.push_back("--no-fused-adamw");
  }
  return out;
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
