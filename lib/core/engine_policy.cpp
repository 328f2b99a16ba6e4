#include "core/engine_policy.h"

namespace hpcbench {

std::string EnginePolicy::name() const {
  if (graph() && fused_model()) return "graph+fused";
  if (graph()) return "graph";
  if (fused_model()) return "fused";
  return "eager";
}

}  // namespace hpcbench
