#pragma once
// What `hpcbench plan` searches (lib/plan): each strategy offers the option
// sets worth trying on a job, defined in its folder beside its spec
// (`<name>::search_space` in spec.cpp) and found through the registry
// (registry.inc), as its spec is.
#include <string>
#include <utility>
#include <vector>

#include "specs/spec.h"

namespace hpcbench::strategies {

struct SearchInputs {
  Shape shape;
  ModelShape model;
  std::string precision;  // the baseline's: fp32, tf32, bf16, fp16
};

// One layout's options, as a label writes them: {{"stage", "3"}, ...}.
using OptionSet = std::vector<std::pair<std::string, std::string>>;

// The option sets `spec` offers on `in` (each becomes a Choice through
// Choice::set; those its checks refuse are plan's to count). A strategy
// added from elsewhere (add_spec) offers its defaults alone.
std::vector<OptionSet> search_space(const Spec& spec, const SearchInputs& in);

// Under mixed precision (bf16, fp16).
inline bool mixed_precision(const SearchInputs& in) { return in.precision == "bf16" || in.precision == "fp16"; }

// Each of `sets` as it is, then again with `key` set to each of `values`.
std::vector<OptionSet> also_with(std::vector<OptionSet> sets, const std::string& key,
                                 const std::vector<std::string>& values);

}  // namespace hpcbench::strategies
