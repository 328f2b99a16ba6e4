#include "strategies/shard/groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"

namespace hpcbench::strategies::shard {

std::vector<std::vector<int>> shard_groups(int group_size, const std::vector<std::string>& hosts, int world) {
  std::vector<std::vector<int>> groups;
  if (group_size > 0) {
    if (world % group_size != 0)
      fail("--shard-group-size {}: {} ranks do not split into groups of {}; use a divisor of the world size",
           group_size, world, group_size);
    for (int r = 0; r < world; ++r) {
      if (r % group_size == 0) groups.emplace_back();
      groups.back().push_back(r);
    }
    return groups;
  }
  if (hosts.empty()) {
    groups.emplace_back();
    for (int r = 0; r < world; ++r) groups.back().push_back(r);
    return groups;
  }
  if (static_cast<int>(hosts.size()) != world) fail("internal: {} host names for {} ranks", hosts.size(), world);
  std::map<std::string, size_t> index;
  for (int r = 0; r < world; ++r) {
    auto [it, added] = index.emplace(hosts[size_t(r)], groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  for (auto& g : groups)
    if (g.size() != groups.front().size())
      fail("--sharding hybrid: node {} runs {} ranks and node {} runs {}; hybrid sharding needs the same number "
           "on every node (or --shard-group-size)", hosts[size_t(groups.front().front())], groups.front().size(),
           hosts[size_t(g.front())], g.size());
  return groups;
}

void place(ShardState& s) {
  auto& comm = s.comm();
  s.place.shard = &comm;
  if (!s.plan.hybrid) return;
  auto groups = shard_groups(s.plan.shard_group, s.ctx.hosts, comm.size());
  const int me = comm.rank();
  size_t g = 0, pos = 0;
  for (size_t i = 0; i < groups.size(); ++i)
    for (size_t k = 0; k < groups[i].size(); ++k)
      if (groups[i][k] == me) g = i, pos = k;
  std::vector<int> replicas;
  for (auto& grp : groups) replicas.push_back(grp[pos]);
  std::sort(replicas.begin(), replicas.end());
  s.plan.shard_group = static_cast<int>(groups[g].size());
  // Every rank creates its shard group, then its replicas' group: the order
  // is the same everywhere, so no rendezvous waits on another.
  s.place.group = comm.subgroup(fmt::format("shard.{}", g), groups[g]);
  if (replicas.size() > 1) s.place.replicas = comm.subgroup(fmt::format("replicate.{}", pos), replicas);
  s.place.shard = s.place.group.get();
}

}  // namespace hpcbench::strategies::shard
