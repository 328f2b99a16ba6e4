#pragma once
// --profile's step range ("3" or "3-5", the run's 1-based optimizer steps):
// read and checked before the first step, so a range the run cannot reach,
// or one that would watch a CUDA graph being captured, fails at once rather
// than after training.
#include <cstdint>
#include <string>

namespace hpcbench::train {

struct StepRange {
  int64_t first = 0, last = 0;  // inclusive; 0: off
  bool on() const { return first > 0; }
  bool contains(int64_t step) const { return on() && step >= first && step <= last; }
  int64_t count() const { return on() ? last - first + 1 : 0; }
};

// "" or "off": off. Throws UserError naming --profile on anything else that
// is not N or A-B with 1 <= A <= B.
StepRange parse_profile_steps(const std::string& text);

// Throws UserError naming --profile when the range ends past `total_steps`,
// or holds `capture_step` (> 0: the step that captures the CUDA graph; the
// profiler's callbacks must not run inside a capture, and a capture is not
// a step the run repeats).
void check_profile_steps(const StepRange& range, const std::string& text, int64_t total_steps,
                         int64_t capture_step);

}  // namespace hpcbench::train
