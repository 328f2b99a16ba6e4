#pragma once
// The instants of a pipeline stage's step that its busy spans and bubble are
// read from (timeline.h), made once and recorded again every step: timing
// then allocates nothing inside the step, and a step captured in a CUDA graph
// keeps its timings. On a CPU an instant is a host clock; on an accelerator
// an event on the compute stream, and under --cuda-graph on CUDA a
// GraphEvent (train/cuda_graph.h), which a capture records as one of the
// graph's own nodes, so that every replay records it again and the host
// reads it after the step's synchronisation as it would an eager step's.
//
// A step of M micro-batches takes its instants in the same order every time
// (its schedule's), so each M keeps a set of its own: the captured step (a
// graph holds full micro-batches only, the largest M) and a short step run
// outside the graph (an epoch's last rows, fewer than M) never mix theirs.
#include <c10/core/Device.h>

#include <chrono>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "strategies/pipeline/timeline.h"

namespace hpcbench::train {
class GraphEvent;
}

namespace c10 {
class Event;
}

namespace hpcbench::strategies::pipeline {

class StepStamps {
 public:
  StepStamps(c10::Device device, bool graph_events);
  ~StepStamps();
  StepStamps(const StepStamps&) = delete;
  StepStamps& operator=(const StepStamps&) = delete;

  // A step of `micro` micro-batches begins: its window opens.
  void begin(int micro);
  // A computation's span, between two instants recorded around it.
  size_t record();
  void busy(size_t from, size_t to) { current_->busy.emplace_back(from, to); }
  void end();  // the window closes
  // The last step ran as a replay of the captured graph, which the host did
  // not see: its instants are the set of the largest M, which the graph
  // recorded again.
  void replayed();
  // The last step's spans in ms from its window's start (waits for the
  // device on accelerators).
  StageTimeline timeline();

 private:
  struct Instant {
    std::unique_ptr<train::GraphEvent> graph_event;
    std::unique_ptr<c10::Event> event;
    std::chrono::steady_clock::time_point t;
  };
  struct Set {
    std::vector<Instant> at;
    size_t next = 0;
    size_t begin = 0, end = 0;
    std::vector<std::pair<size_t, size_t>> busy;
  };
  double ms_between(const Instant& from, const Instant& to);

  c10::Device device_;
  bool graph_events_;
  std::map<int, Set> sets_;
  Set* current_ = nullptr;
};

}  // namespace hpcbench::strategies::pipeline
