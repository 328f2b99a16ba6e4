#include "core/error.h"
#include "strategies/baseline/baseline.h"
#include "strategies/ddp/ddp.h"
#include "strategies/dp/dp.h"

namespace hpcbench::strategies {

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  if (name == "baseline") return std::make_unique<Baseline>();
  if (name == "ddp") return std::make_unique<Ddp>(options);
  if (name == "dp") return std::make_unique<Dp>(options);
  fail("--strategy {}: unknown (known: baseline, ddp, dp)", name);
}

bool needs_comm(const std::string& name) { return name == "ddp"; }

}  // namespace hpcbench::strategies
