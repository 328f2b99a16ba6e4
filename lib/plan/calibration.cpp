#include "plan/calibration.h"

namespace hpcbench::plan {

Calibration calibration_for(const std::string& device_kind) {
  if (device_kind == "cpu")
    // bench/README.md, "The scaling model against CPU runs" and "Pipeline
    // layouts": the step under-predicted by 5.6 % (ddp, 4 ranks, loaded
    // machine) to 76.3 % (pp4 GPipe, 4 ranks on 2 cores).
    return {-0.763, -0.056,
            "bench/README.md: CPU runs on a shared 2-core machine, step under-predicted by 5.6 to 76.3 %"};
  // bench/README.md, "The scaling model against published figures":
  // throughput over-predicted by +0.8 % to +4.5 % (NVIDIA DLE BERT-large on
  // DGX A100, 1 to 32 nodes), i.e. the step under-predicted by 0.8 to 4.3 %.
  return {-0.045 / 1.045, -0.008 / 1.008,
          "bench/README.md: NVIDIA's DGX A100 BERT-large tables, throughput over-predicted by 0.8 to 4.5 %"};
}

Interval measured_step_interval(const Calibration& c, double predicted_s) {
  return {predicted_s / (1 + c.high), predicted_s / (1 + c.low)};
}

double tie_threshold(const Calibration& c, double baseline_noise) {
  return (c.high - c.low) + 2 * baseline_noise;
}

}  // namespace hpcbench::plan
