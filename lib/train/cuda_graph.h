#pragma once
// What capturing a training step in a CUDA graph needs from CUDA, kept here
// so that the rest of the trainer stays device-agnostic (docs/gpu.md, "CUDA
// graph"): the graph itself with its private memory pool, the side stream a
// capture must run on, and events that a
// graph records as its own nodes so that phases stay timed on replay.
// Without a CUDA LibTorch, or on a CPU device, nothing here captures:
// capture_unavailable() says why, and the trainer runs the same graph-ready
// step without capture.
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hpcbench::train {

// Why a step on `device` cannot be captured ("" when it can): "cpu", or this
// build's LibTorch has no CUDA.
std::string capture_unavailable(const c10::Device& device);

// A timing event. Recorded inside a capture it becomes an external event
// node of the graph (cudaEventRecordExternal), so that every replay records
// it again and its time can be read after the step's synchronisation;
// outside a capture it is an ordinary timing event. Only on CUDA.
class GraphEvent {
 public:
  virtual ~GraphEvent() = default;
  virtual void record() = 0;  // on the current stream
  virtual void synchronize() = 0;
  // Milliseconds from this event to `later`.
  virtual double elapsed_ms(const GraphEvent& later) const = 0;
  // The backend's handle (a cudaEvent_t): what a graph's event node records.
  virtual void* native() const = 0;
};
std::unique_ptr<GraphEvent> make_graph_event(const c10::Device& device);

// One captured step on `device` (CUDA only): capture once, replay each step.
// The constructor makes a side stream current (a capture cannot run on the
// default stream) and keeps it current until destruction, so that warm-up,
// capture, replays and the batch copies all run in one stream order.
class StepGraph {
 public:
  explicit StepGraph(const c10::Device& device);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  void capture_begin();
  void capture_end();  // also instantiates the graph
  // The step is read one step late (run/loop.cpp): while replay k + 1 runs,
  // step k's events are read, so a replay must not record the events the
  // previous one did. Each (captured, twin) pair names an event the capture
  // recorded and one that replays with `twins` record in its place (the
  // graph's event nodes retargeted, cudaGraphExecEventRecordNodeSetEvent).
  // Returns why not ("" once set): the loop then reads each step at its
  // end rather than lose the run.
  std::string alternate_events(const std::vector<std::pair<const GraphEvent*, const GraphEvent*>>& pairs);
  void replay(bool twins = false);
  bool captured() const { return captured_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool captured_ = false;
};

}  // namespace hpcbench::train
