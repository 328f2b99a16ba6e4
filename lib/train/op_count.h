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
#include <vector>

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

// Host synchronisations in a region of a step, seen through the same global
// RecordFunction callback: operations whose result the host reads from a
// tensor's value (item, _local_scalar_dense, is_nonzero, nonzero, equal,
// allclose, masked_select, unique, ... each waits for the device), and
// copies from a device into host memory. HPCBENCH_CHECK_SYNC=1 on
// `hpcbench run` arms it from each step's first mark to its end and prints
//   syncs rank <r> step <s>: <n> [names]
// which is how the tests show that the --cuda-graph step never waits on the
// device inside the step (docs/gpu.md): a capture would fail on any of them.
// Exceptions, each a read of host memory by construction: on a CPU, ATen's
// fused AdamW with a tensor learning rate reads that rate through item()
// (its CPU kernel takes a double; the CUDA kernel reads it on the device);
// code the caller names with RECORD_USER_SCOPE("hpcbench::cpu_only_read")
// (the model's all-ones mask check, made on a CPU only); and a wrapped
// number (a host scalar an operator was given as a tensor).
bool check_syncs_requested();

class SyncDetector {
 public:
  explicit SyncDetector(bool enabled);
  ~SyncDetector();
  SyncDetector(const SyncDetector&) = delete;
  SyncDetector& operator=(const SyncDetector&) = delete;
  bool enabled() const { return handle_ != 0; }
  void arm();
  // The synchronising operations since arm(), in order; stops watching.
  std::vector<std::string> disarm();

 private:
  at::CallbackHandle handle_ = 0;
};

}  // namespace hpcbench::train
