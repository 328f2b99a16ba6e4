#pragma once
// The allocation half of the capture contract (docs/gpu.md, "CUDA graph"),
// checked on a CPU: storage that a step's replay would touch must be made
// before the step and kept, so a graph-ready step may neither free a block
// made before it (a gradient set to none, a buffer swapped out) nor leave a
// block it made alive for the next step (a gradient or buffer created
// inside it). Temporaries that live and die inside the step are what a
// capture's private memory pool holds; they are counted, not refused.
//
// HPCBENCH_CHECK_ALLOC=1 on `hpcbench run` wraps the CPU allocator from the
// process's start (every block it hands out is tagged with the step window
// it was made in) and prints, for each step,
//   allocs rank <r> step <s>: <calls> calls, <freed> freed from before, <kept> kept from step <s-1>
// beside HPCBENCH_CHECK_SYNC's line, with the same window: from the step's
// first mark to its end. `kept` counts the previous step's blocks still
// alive when this step starts.
#include <cstdint>

namespace hpcbench::train {

bool check_allocs_requested();

struct AllocWindow {
  int64_t calls = 0;        // allocations inside the window
  int64_t freed_older = 0;  // frees inside it of blocks made before it
  int64_t kept = 0;         // blocks of the previous window alive when this one opened
};

class AllocCounter {
 public:
  explicit AllocCounter(bool enabled);
  AllocCounter(const AllocCounter&) = delete;
  AllocCounter& operator=(const AllocCounter&) = delete;
  bool enabled() const { return enabled_; }
  void arm();
  AllocWindow disarm();

 private:
  bool enabled_ = false;
};

}  // namespace hpcbench::train
