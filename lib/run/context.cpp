#include "run/context.h"

#include <sstream>

#include "distributed/process_group.h"

namespace hpcbench::run {

std::vector<std::string> RunContext::host_list() const {
  std::vector<std::string> out;
  std::istringstream in(hosts);
  for (std::string h; in >> h;) out.push_back(h);
  return out;
}

std::vector<std::string> RunContext::exchange(const std::string& key, const std::string& mine) const {
  if (!comm || world_size <= 1) return {mine};
  return comm->exchange(key, mine);
}

}  // namespace hpcbench::run
