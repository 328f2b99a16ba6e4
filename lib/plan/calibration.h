#pragma once
// How far the scaling model's step has been from measured steps (its
// calibration error), by device, and what that leaves `plan` able to tell
// apart. Two layouts whose predictions differ by less than the spread of
// that error (plus the baseline's own noise, on both of them) are ordered by
// the model's error as much as by the layouts: they are ties.
#include <string>

namespace hpcbench::plan {

// predicted / measured step - 1, from `low` to `high`, where it was checked.
struct Calibration {
  double low = 0, high = 0;
  std::string source;
};

// "cuda" (or another accelerator): against NVIDIA's published DGX A100
// tables; "cpu": against this repository's own CPU runs (bench/README.md).
Calibration calibration_for(const std::string& device_kind);

// The measured step a predicted step `predicted_s` stands for: from
// predicted / (1 + high) to predicted / (1 + low).
struct Interval {
  double low = 0, high = 0;
};
Interval measured_step_interval(const Calibration& c, double predicted_s);

// The relative gap between two layouts' steps below which the calibration
// cannot order them: the error band's width (how differently two layouts
// may be mispredicted) plus twice the baseline's relative noise (each
// layout's measurement scatters by it), as a fraction.
double tie_threshold(const Calibration& c, double baseline_noise);

}  // namespace hpcbench::plan
