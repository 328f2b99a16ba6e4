#pragma once
// The profiled steps' time by kernel: where a device ran the step, its
// kernels, copies and sets (device time, summed over every stream); on a
// CPU, the operators of the thread that ran the steps by their self time
// (an operator's time less its children's, so nested operators are not
// counted twice). A last row holds what no row covers (the device idle, or
// the host outside any operator), so that on one stream or one thread the
// rows add up to the profiled steps' time exactly; streams that overlap
// are said as such (`overlap_ms`), never hidden in the percentages.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hpcbench::run {

struct TracedEvent {
  std::string name;
  bool on_device = false;  // a kernel, copy or set on the accelerator
  uint64_t thread = 0;     // the host thread that recorded it (host events)
  int64_t start_ns = 0, end_ns = 0;
};

struct KernelRow {
  std::string name;
  int64_t calls = 0;
  double total_ms = 0;  // over the profiled steps
  double percent = 0;   // of the profiled steps' time
};

struct KernelTable {
  std::string kind;  // "device kernels" or "CPU operators (self time)"
  std::vector<KernelRow> rows;  // largest first; the idle row last
  int64_t steps = 0;
  double window_ms = 0;   // the profiled steps, end to end, summed
  double busy_ms = 0;     // some row running (the union of their intervals)
  double sum_ms = 0;      // the rows' own time, idle left out
  double overlap_ms = 0;  // sum_ms - busy_ms: streams running at once (device)
};

// `windows`: each profiled step's [start, end) on the same clock as the
// events. `device`: the table of device events (else the host thread
// `thread`'s operators).
KernelTable kernel_table(const std::vector<TracedEvent>& events,
                         const std::vector<std::pair<int64_t, int64_t>>& windows, bool device, uint64_t thread);

// The table as the terminal shows it (the `limit` largest rows, the rest
// summed in one), and as kernel_table.csv holds it (every row).
std::string kernel_table_text(const KernelTable& t, size_t limit);
std::string kernel_table_csv(const KernelTable& t);

}  // namespace hpcbench::run
