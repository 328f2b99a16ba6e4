#pragma once
// Where a sharded run cuts its partitions. Without groups, over the whole
// job. With groups (hybrid sharding), a composition: each group of ranks
// holds one whole copy of the model cut over its ranks, and the groups are
// replicas of each other, so a partition's reduced gradients are averaged
// over the ranks that hold the same partition in the other groups. The rest
// of the engine sees only the two communicators (state.h's Placement).
#include <string>
#include <vector>

#include "strategies/shard/state.h"

namespace hpcbench::strategies::shard {

// The groups: `group_size` consecutive ranks when given, else the ranks of
// each node (`hosts`, rank order; all ranks when empty). Throws UserError
// when the groups cannot have equal sizes.
std::vector<std::vector<int>> shard_groups(int group_size, const std::vector<std::string>& hosts, int world);

// The placement for `s.plan` over the job (collective: every rank creates its
// group, then its replicas' group, in the same order); a grouped plan records
// the size its groups turned out to have.
void place(ShardState& s);

}  // namespace hpcbench::strategies::shard
