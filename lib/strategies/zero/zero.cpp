// zero runs on the sharded engine (lib/strategies/shard) with the plan its
// stage gives (options.h).
#include "strategies/shard/sharded.h"
#include "strategies/zero/options.h"

namespace hpcbench::strategies::zero {

std::unique_ptr<Strategy> make(const Choice& choice) {
  return std::make_unique<shard::Sharded>(plan_of(choice.as<ZeroOptions>()), [choice](const shard::ShardingPlan& p) {
    return shard::SharedOptions::resolved(choice, p).options_text();
  });
}

}  // namespace hpcbench::strategies::zero
