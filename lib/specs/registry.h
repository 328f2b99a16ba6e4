#pragma once
// The strategies there are (registry.inc), as specs (torch-free): what
// `run`, `sweep`, `predict`, `main` and `report` iterate instead of naming
// strategies.
#include <map>
#include <string>
#include <vector>

#include "core/settings.h"
#include "specs/label.h"

namespace hpcbench::strategies {

// Registry order.
const std::vector<const Spec*>& specs();
// Null when there is none of that name.
const Spec* find_spec(const std::string& name);
// Throws UserError "<what>: unknown strategy (known: ...)".
const Spec& spec_named(const std::string& name, const std::string& what);
// The one-device reference (traits().reference).
const Spec& reference_spec();
// "baseline, dp, ..." for help texts and errors.
std::string spec_names();
// Position in the registry (for ordering rows); unknown names last.
int spec_order(const std::string& name);
// A strategy from elsewhere (a test's), after the registry's own.
void add_spec(const Spec& spec);

// Every strategy option's flag once, for the CLI.
struct OptionFlag {
  std::string flag;
  std::string type;  // INT, FLOAT, TEXT; "" for a switch
  std::string help;  // "<strategy>: <help>; ..." with the TOML keys
  std::string switch_text;  // a switch's value as text ("off" for --no-...)
};
std::vector<OptionFlag> option_flags();

// TOML keys strategies take: "<name>.<key>" (their [<name>] sections).
std::vector<std::string> toml_keys();

// The strategy `label` names, its options set from, each over the one
// before: their defaults, the TOML file's [<name>] section (when a file is
// given), the label's own options and `flags` (flag -> text, as the CLI
// collected them). A flag the strategy does not take is a UserError naming
// the flag and the strategies that take it.
Choice configure(const std::string& label, const TomlFile* file, const std::map<std::string, std::string>& flags,
                 const std::string& what);

}  // namespace hpcbench::strategies
