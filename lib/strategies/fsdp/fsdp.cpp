// fsdp runs on the sharded engine (lib/strategies/shard) with the plan its
// sharding gives (options.h).
#include <string>

#include "strategies/fsdp/options.h"
#include "strategies/shard/sharded.h"

namespace hpcbench::strategies::fsdp {

std::unique_ptr<Strategy> make(const Choice& choice) {
  return std::make_unique<shard::Sharded>(plan_of(choice.as<FsdpOptions>()), [choice](const shard::ShardingPlan& p) {
    auto c = shard::SharedOptions::resolved(choice, p);
    // The shard group's size as set-up found it (0 asks for a node's ranks).
    if (p.hybrid) c.set("shard-group", std::to_string(p.shard_group), "fsdp");
    return c.options_text();
  });
}

}  // namespace hpcbench::strategies::fsdp
