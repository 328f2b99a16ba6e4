#pragma once
// `hpcbench report --system/--comm`: the scaling model's step split into the
// same parts as the measured one (report/efficiency.h), beside it, so that a
// model error is attributed to the part that is wrong.
#include <string>
#include <vector>

#include "predict/collective.h"
#include "report/compare.h"
#include "report/efficiency.h"

namespace hpcbench::predict {

struct PredictedParts {
  std::string row;
  bool predicted = false;
  std::string note;              // why not predicted, or what was assumed
  report::Decomposition measured, predicted_parts;  // predicted: same ideal, the model's step
};

// For every efficiency row: the model's step from the row's own baseline
// (its per-rank means where run.json has them, scaled to the row's
// per-device micro-batch) at the row's shape, and its parts: exposed
// communication (the replay's), compute, optimizer and data beyond the
// ideal's share (the model assumes compute linear in the batch, so compute
// inflation is what it leaves out), no waiting (it has no slow rank).
std::vector<PredictedParts> predicted_parts(const report::Comparison& c, const std::vector<report::EfficiencyRow>& rows,
                                            const CommModel& comm);

// The table: per row and part, measured and predicted ms per step and the
// error (predicted - measured).
std::string predicted_parts_report(const std::vector<PredictedParts>& parts, const std::string& network);

}  // namespace hpcbench::predict
