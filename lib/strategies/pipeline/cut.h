#pragma once
// Which encoder layers each pipeline stage holds, without tensors (the
// stages themselves are PipelineStage (stages.h); predict's memory formula and
// the strategy's set-up cut the same way).
#include <cstdint>
#include <string>
#include <vector>

namespace hpcbench::strategies::pipeline {

// Encoder layers per stage. With `given` (--stage-layers) those counts, which
// must be one per stage, each at least 1, summing to `layers`; otherwise the
// balanced cut numpy.array_split makes (the first layers % P stages one layer
// more). Throws UserError naming --stages / --stage-layers, e.g. for more
// stages than layers.
std::vector<int64_t> stage_layer_counts(int64_t layers, int stages, const std::vector<int64_t>& given = {});

// "4,4,4" (or "4/4/4", as run records write it: a comma separates a label's
// options) -> {4, 4, 4}; "" -> {} (the balanced cut). Throws UserError naming
// --stage-layers.
std::vector<int64_t> parse_stage_layers(const std::string& text);

}  // namespace hpcbench::strategies::pipeline
