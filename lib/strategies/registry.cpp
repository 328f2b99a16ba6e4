#include "core/error.h"
#include "strategies/baseline/baseline.h"

namespace hpcbench::strategies {

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "baseline") return std::make_unique<Baseline>();
  fail("--strategy {}: unknown (known: baseline)", name);
}

}  // namespace hpcbench::strategies
