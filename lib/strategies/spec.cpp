#include "strategies/spec.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/split.h"
#include "strategies/registry.h"

namespace hpcbench::strategies {

namespace {

bool is_default(const Setting& s, const std::vector<Setting>& defaults) {
  for (auto& d : defaults)
    if (d.key == s.key) return value_text(d) == value_text(s);
  return false;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join_options(const Choice& c, bool all_shown) {
  auto defaults = c.spec().defaults();
  auto d = defaults->settings();
  auto shown = c.spec().always_shown();
  auto copy = c.options().clone();
  std::string out;
  for (auto& s : copy->settings()) {
    if (!(all_shown && contains(shown, s.key)) && is_default(s, d)) continue;
    if (!out.empty()) out += ',';
    out += s.key + "=" + value_text(s);
  }
  return out;
}

}  // namespace

StateBytes replicated_state(const MemoryInputs& in) {
  double psi = 0;
  for (auto u : in.units) psi += static_cast<double>(u);
  if (in.resident && in.compute_bytes != 4) return {(2.0 * in.compute_bytes + 16) * psi, 0};
  return {16 * psi, 0};
}

double replicated_state_bytes(int64_t parameters, bool resident, int compute_bytes) {
  MemoryInputs in;
  in.units = {parameters};
  in.resident = resident;
  in.compute_bytes = compute_bytes;
  return replicated_state(in).total();
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

std::string Choice::label() const {
  auto o = join_options(*this, false);
  return o.empty() ? name() : name() + ":" + o;
}

std::string Choice::options_text() const { return join_options(*this, true); }

std::string Choice::file_name() const {
  auto defaults = spec_->defaults();
  auto d = defaults->settings();
  std::string out = name();
  for (auto& s : options_->settings()) {
    if (is_default(s, d)) continue;
    out += '-';
    if (auto* b = std::get_if<bool*>(&s.target)) out += (**b ? "" : "no-") + s.key;
    else if (std::holds_alternative<std::string*>(s.target)) out += value_text(s);
    else out += s.key + value_text(s);
  }
  for (auto& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_') ch = '-';
  return out;
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

LabelParts split_label(const std::string& label, const std::string& what) {
  LabelParts parts;
  const auto colon = label.find(':');
  parts.name = label.substr(0, colon);
  if (colon == std::string::npos) return parts;
  for (auto& item : split(std::string_view(label).substr(colon + 1))) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("{} {}: '{}' is not key=value (labels read <strategy>[:<key>=<value>,...])", what, label, item);
    parts.options.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return parts;
}

Choice parse_label(const std::string& label, const std::string& what) {
  auto parts = split_label(label, what);
  const std::string where = fmt::format("{} {}", what, label);
  Choice c(spec_named(parts.name, where));
  for (auto& [k, v] : parts.options) c.set(k, v, where);
  return c;
}

std::vector<Choice> parse_labels(const std::string& text, const std::string& what) {
  std::vector<std::string> labels;
  for (auto& item : split(text)) {
    if (item.empty()) fail("{}: empty entry in '{}' (expected a comma-separated list)", what, text);
    if (item.find('=') != std::string::npos && item.find(':') == std::string::npos) {
      if (labels.empty()) fail("{}: '{}' in '{}' names no strategy", what, item, text);
      labels.back() += "," + item;
    } else {
      labels.push_back(item);
    }
  }
  std::vector<Choice> out;
  std::vector<std::string> seen;
  for (auto& l : labels) {
    auto c = parse_label(l, what);
    if (contains(seen, c.label())) continue;
    seen.push_back(c.label());
    out.push_back(std::move(c));
  }
  return out;
}

Choice parse_record(const std::string& strategy, const std::string& options) {
  const std::string what = fmt::format("strategy {} ({})", strategy, options);
  Choice c(spec_named(strategy, what));
  auto facts = c.spec().facts();
  for (auto& item : split(options)) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (item.starts_with("no-")) c.set(item.substr(3), "off", what);
      else fail("{}: '{}' is not key=value", what, item);
      continue;
    }
    if (contains(facts, item.substr(0, eq))) continue;
    c.set(item.substr(0, eq), item.substr(eq + 1), what);
  }
  return c;
}

}  // namespace hpcbench::strategies
