#pragma once
// One grammar names a configuration everywhere: the label
// "<name>[:<key>=<value>,...]" (`run --strategy zero:stage=3,prefetch=off`,
// `sweep --strategies`, `predict --strategies`), whose options part is what
// run records keep as strategy_options. Choice::label, options_text and
// file_name (spec.h) write it; these read it back.
#include <string>
#include <utility>
#include <vector>

#include "specs/spec.h"

namespace hpcbench::strategies {

// A label's name and key=value items, unchecked beyond their form.
struct LabelParts {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
};
LabelParts split_label(const std::string& label, const std::string& what);

// A label (zero, zero:stage=3,prefetch=off); throws UserError naming `what`
// (the flag), the known strategies or the strategy's option keys.
Choice parse_label(const std::string& label, const std::string& what);
// Comma-separated labels ("ddp,zero:stage=3,prefetch=off,fsdp": a token
// holding '=' continues the label before it), without repeats.
std::vector<Choice> parse_labels(const std::string& text, const std::string& what);
// A run record's strategy and strategy_options. Files of older versions
// wrote switches as "no-overlap", which is read as overlap=off; facts are
// skipped.
Choice parse_record(const std::string& strategy, const std::string& options);

}  // namespace hpcbench::strategies
