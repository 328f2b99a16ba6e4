#pragma once
// --tunableop: ATen's TunableOp (aten/src/ATen/cuda/tunable) choosing each
// GEMM's implementation by timing the candidates for its shape, in step 1
// only. Step 1 is never timed (--timing-warmup-steps >= 1, train::validate)
// and is an eager warm-up step under --cuda-graph, so nothing is tuned inside
// a capture or a timed step: from step 2 on tuning is off and the choices
// made stay in use (an untuned shape, an epoch's short last batch, takes
// "Default"). The choices are rank 0's, kept per shape in the results file
// PyTorch itself reads back (PYTORCH_TUNABLEOP_FILENAME).
//
// On CUDA in PyTorch 2.11 the GEMMs register one candidate, "Default" (the
// cuBLAS / cuBLASLt call ATen makes without TunableOp; rocBLAS and hipBLASLt
// candidates exist on ROCm only): docs/gpu.md, "TunableOp". On a device that
// is not CUDA nothing is tuned, and the record says why.
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <string>

namespace hpcbench::train {

struct GemmTuningRecord {
  bool requested = false;
  bool on = false;     // TunableOp ran, tuning in step 1
  std::string reason;  // requested and off: why
  int64_t gemms = 0;   // (operation, shape) pairs tuned
  std::map<std::string, int64_t> chosen;  // implementation -> how many of them chose it
  std::string results;  // the results file's text (PyTorch's format); "" when off
};

inline constexpr const char* kTunableOpFile = "tunableop_results.csv";
inline constexpr int64_t kTunedSteps = 1;

// The PYTORCH_TUNABLEOP_* variables that would override --tunableop's own
// settings (PyTorch reads them once, over any call): the first one set, ""
// when none is.
std::string tunableop_override_in_environment();

class GemmTuning {
 public:
  // Before step 1. `requested`: --tunableop.
  GemmTuning(bool requested, const c10::Device& device);
  ~GemmTuning();  // TunableOp off again for whatever this process runs next
  GemmTuning(const GemmTuning&) = delete;
  GemmTuning& operator=(const GemmTuning&) = delete;

  bool on() const { return rec_.on; }
  const std::string& why_off() const { return rec_.reason; }  // requested and off
  // After step `step` (1-based): tuning ends after kTunedSteps.
  void after_step(int64_t step);
  // After the loop: what was tuned and chosen.
  GemmTuningRecord take();

 private:
  GemmTuningRecord rec_;
  std::string scratch_;  // the file PyTorch appends its results to as it tunes
};

}  // namespace hpcbench::train
