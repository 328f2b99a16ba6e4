#pragma once
// What `hpcbench plan` prints: the search (layouts enumerated, refused by
// reason, predicted, its time), the calibration and the ties it makes, and
// the top N, each with where its step goes beyond the ideal.
#include <string>

#include "plan/search.h"

namespace hpcbench::plan {

std::string plan_text(const Result& result, const Request& request, int top);

// What verifying the top `k` costs in GPU hours at `steps` optimizer steps a
// job (predicted steps x devices; start-up and evaluation not counted),
// beside running every predicted layout (the full grid).
std::string cost_text(const Result& result, const Request& request, int k, int64_t steps);

}  // namespace hpcbench::plan
