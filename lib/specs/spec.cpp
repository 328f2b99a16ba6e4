#include "specs/spec.h"

#include <fmt/ranges.h>

#include "core/error.h"

namespace hpcbench::strategies {

StateBytes replicated_state(const MemoryInputs& in) {
  double psi = 0;
  for (auto u : in.units) psi += static_cast<double>(u);
  if (in.resident && in.compute_bytes != 4) return {(2.0 * in.compute_bytes + 12) * psi, 0};
  return {16 * psi, 0};
}

double replicated_state_bytes(int64_t parameters, bool resident, int compute_bytes) {
  MemoryInputs in;
  in.units = {parameters};
  in.resident = resident;
  in.compute_bytes = compute_bytes;
  return replicated_state(in).total();
}

EngineSupport EngineSupport::undeclared(const std::string& strategy) {
  const auto none = Capability::no(fmt::format(
      "{} declares no engine settings (its spec's engine(), docs/architecture.md \"Adding a strategy\")", strategy));
  return {none, none, none};
}

EngineSupport EngineSupport::unfused(Capability capture, const std::string& why) {
  return {std::move(capture), Capability::no(why), Capability::no(why)};
}

Choice::Choice(const Spec& spec) : spec_(&spec), options_(spec.defaults()) {}
Choice::Choice(const Choice& other) : spec_(other.spec_), options_(other.options_->clone()) {}
Choice& Choice::operator=(const Choice& other) {
  if (this != &other) {
    spec_ = other.spec_;
    options_ = other.options_->clone();
  }
  return *this;
}

void Choice::set(const std::string& key, const std::string& value, const std::string& what) {
  std::vector<std::string> keys;
  for (auto& s : options_->settings()) {
    if (s.key != key) {
      keys.push_back(s.key);
      continue;
    }
    try {
      set_from_string(s, value);
    } catch (const UserError& e) {
      fail("{}: {}={}: {}", what, key, value, e.what());
    }
    return;
  }
  if (keys.empty()) fail("{}: {} has no options (not {}={})", what, name(), key, value);
  fail("{}: {} has no option '{}' (its options: {})", what, name(), key, fmt::join(keys, ", "));
}

}  // namespace hpcbench::strategies
