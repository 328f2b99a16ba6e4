#pragma once
// `hpcbench report --system FILE|--comm FILE`: each measured run beside what
// the scaling model predicts for it from the report's baseline, with the
// error. Kept out of lib/report: the report only hands over its comparison.
#include <string>

#include "predict/collective.h"
#include "report/compare.h"

namespace hpcbench::predict {

// A table (text) of the runs of more than one device whose own baseline is
// comparable by weak-scaling rules (same model, precision, sequence, batch
// per device): strategy, shape, measured and predicted step ms and
// throughput, error. Rows the model cannot predict say why.
std::string versus_report(const report::Comparison& comparison, const CommModel& comm, const std::string& network);

}  // namespace hpcbench::predict
