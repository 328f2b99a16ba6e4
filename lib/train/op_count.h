#pragma once
// A developer's measure of host work: the ATen operations this process
// dispatches per training step, counted through a global RecordFunction
// callback (what the PyTorch profiler records, without its timing). Enabled
// by HPCBENCH_COUNT_OPS=1 on `hpcbench run`, which then prints, for every
// step after the timing warm-up,
//   ops rank <r> step <s>: <top> top-level, <all> in all
// where "top-level" are the operations called from outside any other ATen
// operation (each a dispatch from hpcbench's code or from autograd, and on a
// GPU usually a kernel launch) and "in all" adds those operations call in
// turn (on CPU a foreach operation calls one per tensor). Counting is
// deterministic, so a change's effect reads exactly where timings are noise.
// HPCBENCH_COUNT_OPS=names adds the top-level operations by name.
#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <string>

namespace hpcbench::train {

struct OpCounts {
  int64_t top_level = 0;
  int64_t all = 0;
  std::map<std::string, int64_t> top_level_names;  // with HPCBENCH_COUNT_OPS=names only
};

// Whether HPCBENCH_COUNT_OPS asks for counts (set, and neither "" nor "0").
bool count_ops_requested();

// Counts from construction (when enabled) until destruction; one at a time
// per process. Disabled, it installs nothing and costs nothing.
class OpCounter {
 public:
  explicit OpCounter(bool enabled);
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  bool enabled() const { return handle_ != 0; }
  // The counts since construction or the previous take(), then starts again.
  OpCounts take();
  // take() as the lines `hpcbench run` prints (with HPCBENCH_COUNT_OPS=names
  // one more line per top-level operation name, the most frequent first).
  std::string take_report(int rank, int64_t step);

 private:
  at::CallbackHandle handle_ = 0;
};

}  // namespace hpcbench::train
