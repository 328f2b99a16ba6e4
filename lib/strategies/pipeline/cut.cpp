#include "strategies/pipeline/cut.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "core/error.h"
#include "core/split.h"

namespace hpcbench::strategies::pipeline {

std::vector<int64_t> stage_layer_counts(int64_t layers, int stages, const std::vector<int64_t>& given) {
  if (stages < 1) fail("--stages {}: must be at least 1", stages);
  if (!given.empty()) {
    if (static_cast<int>(given.size()) != stages)
      fail("--stage-layers {}: {} counts for {} stages (--stages); give one count per stage", fmt::join(given, ","),
           given.size(), stages);
    for (auto n : given)
      if (n < 1) fail("--stage-layers {}: every stage needs at least one encoder layer", fmt::join(given, ","));
    const int64_t sum = std::accumulate(given.begin(), given.end(), int64_t{0});
    if (sum != layers)
      fail("--stage-layers {}: the counts add up to {} but the model has {} encoder layers", fmt::join(given, ","),
           sum, layers);
    return given;
  }
  if (stages > layers)
    fail("--stages {}: the model has {} encoder layers, fewer than the stages (every stage needs at least one "
         "layer); use at most {} stages",
         stages, layers, layers);
  std::vector<int64_t> counts(size_t(stages), layers / stages);
  for (int64_t s = 0; s < layers % stages; ++s) ++counts[size_t(s)];
  return counts;
}

std::vector<int64_t> parse_stage_layers(const std::string& text) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  std::string commas = text;
  for (auto& c : commas)
    if (c == '/') c = ',';
  for (const auto& item : split(commas)) {
    // "4,4," would otherwise read as three counts, the last not a number.
    if (item.empty())
      fail("--stage-layers {}: an empty count (a leading, trailing or doubled separator); give one layer count per "
           "stage, such as 4,4,4",
           text);
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      fail("--stage-layers {}: \"{}\" is not a whole number (give layer counts such as 4,4,4)", text, item);
    out.push_back(n);
  }
  if (out.empty()) fail("--stage-layers {}: no counts given (e.g. 4,4,4)", text);
  return out;
}

}  // namespace hpcbench::strategies::pipeline
