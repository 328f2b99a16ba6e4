#pragma once
// Phase timing within one training step without per-phase synchronisation:
// on an accelerator every boundary records an event on the current stream and
// the step synchronises once at its end; on CPU work is synchronous, so a
// steady clock at each boundary is exact.
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <array>
#include <chrono>
#include <memory>
#include <vector>

namespace hpcbench::train {

enum class Phase { Data = 0, Forward, Backward, Comm, Optimizer, Count };
inline constexpr size_t kPhases = static_cast<size_t>(Phase::Count);
const char* phase_name(Phase p);

class StepTimer {
 public:
  explicit StepTimer(c10::Device device);
  void begin();             // start of a step
  void mark(Phase ended);   // the phase that just ended (phases may repeat: accumulation)
  // Synchronises; returns the step's total ms and fills per-phase ms.
  double end(std::array<double, kPhases>& phase_ms);

 private:
  struct Mark {
    Phase phase;
    std::unique_ptr<c10::Event> event;
    std::chrono::steady_clock::time_point t;
  };
  void record(Mark& m);
  c10::Device device_;
  Mark start_;
  std::vector<Mark> marks_;
};

}  // namespace hpcbench::train
