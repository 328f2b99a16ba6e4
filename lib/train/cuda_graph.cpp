#include "train/cuda_graph.h"

#include "core/error.h"

#include <fmt/format.h>

#if HPCBENCH_TRAIN_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAException.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#endif

namespace hpcbench::train {

std::string capture_unavailable(const c10::Device& device) {
  if (device.is_cpu()) return "cpu";
#if HPCBENCH_TRAIN_CUDA
  if (device.is_cuda()) return "";
  return "device " + device.str() + " is not CUDA";
#else
  return "this build's LibTorch has no CUDA";
#endif
}

#if HPCBENCH_TRAIN_CUDA

namespace {
class CudaGraphEvent final : public GraphEvent {
 public:
  // Timing enabled (no cudaEventDisableTiming); cudaEventExternal is
  // torch's flag for "record as an external node while capturing"
  // (c10/cuda/CUDAEvent.h), ignored outside a capture.
  CudaGraphEvent() : event_(cudaEventDefault | cudaEventExternal) {}
  void record() override { event_.record(c10::cuda::getCurrentCUDAStream()); }
  void synchronize() override { event_.synchronize(); }
  double elapsed_ms(const GraphEvent& later) const override {
    return event_.elapsed_time(static_cast<const CudaGraphEvent&>(later).event_);
  }
  // CUDAEvent makes its cudaEvent_t at the first record: a twin that no
  // replay has recorded yet is recorded once here, outside any capture.
  void* native() const override {
    if (!event_.isCreated()) const_cast<c10::cuda::CUDAEvent&>(event_).record(c10::cuda::getCurrentCUDAStream());
    return static_cast<void*>(event_.event());
  }

 private:
  c10::cuda::CUDAEvent event_;
};
}  // namespace

std::unique_ptr<GraphEvent> make_graph_event(const c10::Device& device) {
  if (!device.is_cuda()) fail("internal: graph events are CUDA events (device {})", device.str());
  return std::make_unique<CudaGraphEvent>();
}

struct StepGraph::Impl {
  explicit Impl(const c10::Device& d)
      : device(d), stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d.index())) {
    // The side stream starts after everything already queued on the
    // current one (the model's set-up, the broadcast of its weights).
    auto previous = c10::cuda::getCurrentCUDAStream(d.index());
    c10::cuda::CUDAEvent ready;
    ready.record(previous);
    ready.block(stream);
    guard.emplace(stream);
  }
  c10::Device device;
  c10::cuda::CUDAStream stream;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
  // keep_graph: the captured graph stays, so that its event nodes can be
  // found and retargeted in the executable one.
  at::cuda::CUDAGraph graph{/*keep_graph=*/true};
  struct Retarget {
    cudaGraphNode_t node;
    cudaEvent_t captured, twin;
  };
  std::vector<Retarget> retargets;
  bool twins_set = false;  // the executable graph records the twins now
};

StepGraph::StepGraph(const c10::Device& device) {
  if (auto why = capture_unavailable(device); !why.empty()) fail("internal: no CUDA graph capture here ({})", why);
  impl_ = std::make_unique<Impl>(device);
}

StepGraph::~StepGraph() {
  if (!impl_) return;
  // Work queued on the side stream finishes before the default stream, which
  // evaluation and the run's end use, goes on.
  c10::cuda::CUDAEvent done;
  done.record(impl_->stream);
  impl_->guard.reset();
  done.block(c10::cuda::getCurrentCUDAStream(impl_->device.index()));
}

// Global capture mode (torch.cuda.graph's default): another thread's unsafe
// CUDA call during the capture fails loudly instead of corrupting it. The
// hang monitor's thread is paused meanwhile (distributed/hang_monitor.h).
// As torch.cuda.graph does (torch/cuda/graphs.py, __enter__), the device is
// idle and the allocator's cache emptied when the capture begins: the blocks
// the eager warm-up cached would otherwise stay reserved beside the graph's
// private pool for the whole run, memory the device holds that no step uses
// (NVML's process peak at batch 32: 11,097 MiB graphed and fused against
// 7,519 MiB eager, results/reference/gpu/H100-80GB-HBM3-20261127).
void StepGraph::capture_begin() {
  c10::cuda::device_synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  impl_->graph.capture_begin();
}

void StepGraph::capture_end() {
  impl_->graph.capture_end();
  impl_->graph.instantiate();  // keep_graph defers it to here
  captured_ = true;
}

std::string StepGraph::alternate_events(const std::vector<std::pair<const GraphEvent*, const GraphEvent*>>& pairs) {
  if (!captured_) return "internal: alternate_events before the capture";
  cudaGraph_t g = impl_->graph.raw_cuda_graph();
  size_t n = 0;
  C10_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  C10_CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
  impl_->retargets.clear();
  for (auto node : nodes) {
    cudaGraphNodeType type{};
    C10_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeEventRecord) continue;
    cudaEvent_t e{};
    C10_CUDA_CHECK(cudaGraphEventRecordNodeGetEvent(node, &e));
    for (const auto& [captured, twin] : pairs)
      if (static_cast<cudaEvent_t>(captured->native()) == e)
        impl_->retargets.push_back({node, e, static_cast<cudaEvent_t>(twin->native())});
  }
  // Each captured event is one node; an event the graph does not record
  // would leave its twin unrecorded, its times read from a stale record.
  if (impl_->retargets.size() != pairs.size()) {
    const auto why = fmt::format("{} of the captured step's {} timing events found as event nodes of its graph",
                                 impl_->retargets.size(), pairs.size());
    impl_->retargets.clear();
    return why;
  }
  return "";
}

void StepGraph::replay(bool twins) {
  if (twins != impl_->twins_set) {
    cudaGraphExec_t exec = impl_->graph.raw_cuda_graph_exec();
    for (const auto& r : impl_->retargets)
      C10_CUDA_CHECK(cudaGraphExecEventRecordNodeSetEvent(exec, r.node, twins ? r.twin : r.captured));
    impl_->twins_set = twins;
  }
  impl_->graph.replay();
}

#else

std::unique_ptr<GraphEvent> make_graph_event(const c10::Device& device) {
  fail("internal: graph events need a CUDA build (device {})", device.str());
}

struct StepGraph::Impl {};

StepGraph::StepGraph(const c10::Device& device) {
  fail("internal: no CUDA graph capture here ({})", capture_unavailable(device));
}
StepGraph::~StepGraph() = default;
void StepGraph::capture_begin() {}
void StepGraph::capture_end() {}
std::string StepGraph::alternate_events(const std::vector<std::pair<const GraphEvent*, const GraphEvent*>>&) {
  return "no CUDA graphs in this build";
}
void StepGraph::replay(bool) {}

#endif

}  // namespace hpcbench::train
