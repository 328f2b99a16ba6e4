#include "train/cuda_graph.h"

#include "core/error.h"

#if HPCBENCH_TRAIN_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
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
  at::cuda::CUDAGraph graph;
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
  impl_->graph.capture_end();  // instantiates the executable graph
  captured_ = true;
}

void StepGraph::replay() { impl_->graph.replay(); }

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
void StepGraph::replay() {}

#endif

}  // namespace hpcbench::train
