#pragma once
// Device-agnostic helpers: everything goes through c10's accelerator API so
// that the same code runs on CPU (tests here) and on CUDA (the GPU machine),
// and no CUDA header is needed to compile it.
#include <c10/core/Device.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hpcbench {

// "auto" (the accelerator if present, else CPU), "cpu", "cuda", "cuda:N".
// With "auto"/"cuda" the local rank picks the device index.
c10::Device resolve_device(const std::string& spec, int local_rank = 0);

// Makes `device` the current accelerator (a no-op on CPU) and returns it: a
// context created later by anything (streams, events, NCCL) lands there and
// not on GPU 0.
c10::Device make_current(c10::Device device);

// Waits for all queued work on the device; a no-op on CPU.
void synchronize(const c10::Device& device);

struct DeviceDescription {
  std::string kind;      // "cpu", "cuda"
  std::string name;      // e.g. "NVIDIA H100 80GB HBM3" or the CPU model
  size_t total_memory = 0;
};
DeviceDescription describe(const c10::Device& device);

// The accelerator's PCI bus id ("0000:1B:00.0"), the same whatever
// CUDA_VISIBLE_DEVICES calls it: two ranks of one host with the same id share
// a GPU. Empty on CPU or when the driver cannot say.
std::string device_bus_id(const c10::Device& device);

// What tells two ranks' devices apart: the bus id and, where the driver has
// one, the device's UUID. MIG instances of one GPU share a bus id but not a
// UUID, so they are distinct devices here. Empty on CPU or when the driver
// cannot say.
std::string device_identity(const c10::Device& device);

// A warning for a run whose --precision this CPU has no native matmul
// kernels for (fp16 without AVX512-FP16/AMX-FP16, bf16 without
// AVX512-BF16/AMX-BF16): the run is correct but its times say little.
// Empty on accelerators and where the kernels exist.
std::string slow_precision_warning(const c10::Device& device, const std::string& precision);

// Accelerators visible to this process (0 on a CPU-only machine).
int accelerator_count();

// Peak bytes the device held for this process since the last reset: on
// accelerators the caching allocator's reserved peak (its cached blocks and
// a CUDA graph's private pool included: memory no other process can use),
// on CPU the process's peak RSS.
size_t peak_memory_bytes(const c10::Device& device);
// Peak bytes of live tensors since the last reset (the caching allocator's
// allocated peak, below what it reserved); 0 on CPU, which has no such count.
size_t peak_allocated_bytes(const c10::Device& device);
void reset_peak_memory(const c10::Device& device);

// Times device work honestly: on an accelerator with events recorded on the
// current stream, on CPU with a steady clock after the work is done.
class DeviceTimer {
 public:
  explicit DeviceTimer(c10::Device device);
  void start();
  // Returns milliseconds between start() and stop(); synchronizes.
  double stop();

 private:
  c10::Device device_;
  std::chrono::steady_clock::time_point t0_;
  struct Events;
  std::shared_ptr<Events> events_;
};

}  // namespace hpcbench
