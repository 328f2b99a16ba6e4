#include "specs/registry.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "specs/search.h"

namespace hpcbench::strategies {

#define HPCBENCH_STRATEGY(name)                                \
  namespace name {                                             \
  const Spec& spec();                                          \
  std::vector<OptionSet> search_space(const SearchInputs& in); \
  }
#include "specs/registry.inc"
#undef HPCBENCH_STRATEGY

namespace {

std::vector<const Spec*>& registry() {
  static std::vector<const Spec*> all = {
#define HPCBENCH_STRATEGY(name) &name::spec(),
#include "specs/registry.inc"
#undef HPCBENCH_STRATEGY
  };
  return all;
}

}  // namespace

const std::vector<const Spec*>& specs() { return registry(); }

std::vector<OptionSet> search_space(const Spec& spec, const SearchInputs& in) {
#define HPCBENCH_STRATEGY(name) \
  if (&spec == &name::spec()) return name::search_space(in);
#include "specs/registry.inc"
#undef HPCBENCH_STRATEGY
  return {OptionSet{}};
}

std::vector<OptionSet> also_with(std::vector<OptionSet> sets, const std::string& key,
                                 const std::vector<std::string>& values) {
  const size_t n = sets.size();
  for (const auto& v : values)
    for (size_t k = 0; k < n; ++k) {
      auto with = sets[k];
      with.emplace_back(key, v);
      sets.push_back(std::move(with));
    }
  return sets;
}

const Spec* find_spec(const std::string& name) {
  for (auto* s : registry())
    if (s->name() == name) return s;
  return nullptr;
}

std::string spec_names() {
  std::vector<std::string> names;
  for (auto* s : registry()) names.push_back(s->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

const Spec& spec_named(const std::string& name, const std::string& what) {
  if (auto* s = find_spec(name)) return *s;
  fail("{}: unknown strategy '{}' (known: {})", what, name, spec_names());
}

const Spec& reference_spec() {
  for (auto* s : registry())
    if (s->traits().reference) return *s;
  fail("internal: no strategy is the one-device reference");
}

int spec_order(const std::string& name) {
  const auto& all = registry();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i]->name() == name) return static_cast<int>(i);
  return static_cast<int>(all.size());
}

void add_spec(const Spec& spec) {
  if (find_spec(spec.name())) fail("internal: strategy {} registered twice", spec.name());
  registry().push_back(&spec);
}

std::vector<OptionFlag> option_flags() {
  struct Entry {
    OptionFlag f;
    std::vector<std::pair<std::string, std::string>> uses;  // help -> strategies
    std::vector<std::string> keys;
  };
  std::vector<Entry> entries;
  for (auto* spec : registry()) {
    auto options = spec->defaults();
    for (auto& s : options->settings()) {
      auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.f.flag == s.flag; });
      if (it == entries.end()) {
        Entry e;
        e.f.flag = s.flag;
        e.f.type = type_name(s);
        if (e.f.type.empty()) e.f.switch_text = switch_value(s) ? "on" : "off";
        entries.push_back(std::move(e));
        it = entries.end() - 1;
      } else if (it->f.type != type_name(s)) {
        fail("internal: flag {} has two types ({} for {})", s.flag, type_name(s), spec->name());
      }
      auto use = std::find_if(it->uses.begin(), it->uses.end(), [&](auto& u) { return u.first == s.help; });
      if (use == it->uses.end()) it->uses.emplace_back(s.help, spec->name());
      else use->second += ", " + spec->name();
      it->keys.push_back(spec->name() + "." + s.key);
    }
  }
  std::vector<OptionFlag> out;
  for (auto& e : entries) {
    std::vector<std::string> parts;
    for (auto& [help, who] : e.uses) parts.push_back(who + ": " + help);
    e.f.help = fmt::format("{} [{}]", fmt::join(parts, "; "), fmt::join(e.keys, ", "));
    out.push_back(std::move(e.f));
  }
  return out;
}

std::vector<std::string> toml_keys() {
  std::vector<std::string> out;
  for (auto* spec : registry()) {
    auto options = spec->defaults();
    for (auto& s : options->settings()) out.push_back(spec->name() + "." + s.key);
  }
  return out;
}

Choice configure(const std::string& label, const TomlFile* file, const std::map<std::string, std::string>& flags,
                 const std::string& what) {
  auto parts = split_label(label, what);
  const std::string where = fmt::format("{} {}", what, label);
  Choice choice(spec_named(parts.name, where));
  auto settings = choice.options().settings();
  if (file) file->apply(settings, choice.name() + ".");
  for (auto& [k, v] : parts.options) choice.set(k, v, where);
  for (const auto& flag_value : flags) {
    // Named members, not a structured binding: Clang before 16 cannot capture
    // a binding in a lambda (P1091).
    const auto& flag = flag_value.first;
    const auto& value = flag_value.second;
    auto it = std::find_if(settings.begin(), settings.end(), [&](const Setting& s) { return s.flag == flag; });
    if (it != settings.end()) {
      // An option written in the label and given again by its flag: the
      // user meant one of them, and taking either silently runs what the
      // other one said not to.
      auto in_label = std::find_if(parts.options.begin(), parts.options.end(),
                                   [&](const auto& kv) { return kv.first == it->key; });
      const std::string before = value_text(*it);
      set_from_string(*it, value);
      if (in_label != parts.options.end() && value_text(*it) != before)
        fail("{} {} and {}: two values for {}'s option '{}'; give it once", what, label,
             flag + (type_name(*it).empty() ? "" : " " + value), choice.name(), it->key);
      continue;
    }
    std::vector<std::string> takers;
    bool is_switch = false;
    for (auto* spec : registry()) {
      auto o = spec->defaults();
      for (auto& s : o->settings())
        if (s.flag == flag) {
          takers.push_back(spec->name());
          is_switch = type_name(s).empty();
        }
    }
    std::string who = takers.empty() ? "none" : takers.back();
    for (size_t i = takers.empty() ? 0 : takers.size() - 1; i-- > 0;)
      who = takers[i] + (i + 2 == takers.size() ? " and " : ", ") + who;
    fail("{}{} applies to --strategy {}, not {}", flag, is_switch ? "" : " " + value, who, choice.name());
  }
  return choice;
}

}  // namespace hpcbench::strategies
