#include <fmt/ranges.h>

#include "core/error.h"
#include "strategies/names.h"
#include "strategies/baseline/baseline.h"
#include "strategies/ddp/ddp.h"
#include "strategies/dp/dp.h"
#include "strategies/fsdp/fsdp.h"
#include "strategies/zero/zero.h"

namespace hpcbench::strategies {

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  if (!options.reduce_dtype.empty() && name != "zero" && name != "fsdp")
    fail("--reduce-dtype {} applies to --strategy zero and fsdp (their mixed precision), not {}",
         options.reduce_dtype, name);
  if (name == "baseline") return std::make_unique<Baseline>();
  if (name == "ddp") return std::make_unique<Ddp>(options);
  if (name == "dp") return std::make_unique<Dp>(options);
  if (name == "zero") return make_zero(options);
  if (name == "fsdp") return make_fsdp(options);
  fail("--strategy {}: unknown (known: {})", name, fmt::join(kStrategyNames, ", "));
}

bool needs_comm(const std::string& name) { return name == "ddp" || name == "zero" || name == "fsdp"; }

}  // namespace hpcbench::strategies
