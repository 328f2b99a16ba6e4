// The Strategy each registry line (registry.inc) names.
#include <utility>
#include <vector>

#include "core/error.h"
#include "specs/registry.h"
#include "strategies/strategy.h"

namespace hpcbench::strategies {

using Maker = std::unique_ptr<Strategy> (*)(const Choice&);

#define HPCBENCH_STRATEGY(name)                    \
  namespace name {                                 \
  const Spec& spec();                              \
  std::unique_ptr<Strategy> make(const Choice& c); \
  }
#include "specs/registry.inc"
#undef HPCBENCH_STRATEGY

namespace {

std::vector<std::pair<const Spec*, Maker>>& makers() {
  static std::vector<std::pair<const Spec*, Maker>> all = {
#define HPCBENCH_STRATEGY(name) {&name::spec(), &name::make},
#include "specs/registry.inc"
#undef HPCBENCH_STRATEGY
  };
  return all;
}

}  // namespace

std::unique_ptr<Strategy> make_strategy(const Choice& choice) {
  for (auto& [spec, make] : makers())
    if (spec == &choice.spec()) return make(choice);
  fail("--strategy {}: no code trains under it here", choice.name());
}

void add_strategy(const Spec& spec, Maker make) {
  add_spec(spec);
  makers().emplace_back(&spec, make);
}

}  // namespace hpcbench::strategies
