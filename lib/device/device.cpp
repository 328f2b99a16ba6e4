#include "device/device.h"

#include <dlfcn.h>

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#if HPCBENCH_DEVICE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <sstream>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/hostinfo.h"

namespace hpcbench {

int accelerator_count() {
  auto acc = at::getAccelerator(false);
  if (!acc) return 0;
  return static_cast<int>(at::accelerator::deviceCount());
}

c10::Device resolve_device(const std::string& spec, int local_rank) {
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec == "auto" || spec == "cuda") {
    int n = accelerator_count();
    if (n == 0) {
      if (spec == "cuda") fail("--device cuda: no CUDA device is visible to this process");
      return c10::Device(c10::kCPU);
    }
    auto type = *at::getAccelerator(true);
    if (local_rank >= n)
      fail("local rank {} needs device {} but only {} are visible (check --gpus-per-node and "
           "CUDA_VISIBLE_DEVICES)", local_rank, local_rank, n);
    return c10::Device(type, static_cast<c10::DeviceIndex>(local_rank));
  }
  try {
    c10::Device d(spec);
    if (d.type() != c10::kCPU && (!d.has_index() || d.index() >= accelerator_count()))
      fail("--device {}: no such device ({} visible)", spec, accelerator_count());
    return d;
  } catch (const c10::Error&) {
    fail("--device {}: not a device (use auto, cpu, cuda or cuda:N)", spec);
  }
}

void synchronize(const c10::Device& device) {
  if (device.is_cpu()) return;
  at::accelerator::synchronizeDevice(device.index());
}

namespace {
std::string cpu_model_name() {
  std::istringstream in(read_file_or_empty("/proc/cpuinfo", file_limit::kProc));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

bool cpu_has_flag(const std::string& flag) {
  std::istringstream in(read_file_or_empty("/proc/cpuinfo", file_limit::kProc));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// The device's marketing name through the CUDA driver API, looked up at run
// time so that nothing here needs CUDA headers or links libcuda.
std::string cuda_device_name(int index, size_t* total) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) lib = ::dlopen("libcuda.so.1", RTLD_LAZY);
  if (!lib) return "CUDA device";
  using GetName = int (*)(char*, int, int);
  using TotalMem = int (*)(size_t*, int);
  using DeviceGet = int (*)(int*, int);
  auto get = reinterpret_cast<DeviceGet>(::dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<GetName>(::dlsym(lib, "cuDeviceGetName"));
  auto mem = reinterpret_cast<TotalMem>(::dlsym(lib, "cuDeviceTotalMem_v2"));
  int dev = 0;
  char buf[256] = {0};
  if (!get || !name || get(&dev, index) != 0 || name(buf, sizeof(buf) - 1, dev) != 0)
    return "CUDA device";
  if (mem && total) mem(total, dev);
  return buf;
}
}  // namespace

std::string device_bus_id(const c10::Device& device) {
  if (!device.is_cuda()) return "";
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) lib = ::dlopen("libcuda.so.1", RTLD_LAZY);
  if (!lib) return "";
  using DeviceGet = int (*)(int*, int);
  using BusId = int (*)(char*, int, int);
  auto get = reinterpret_cast<DeviceGet>(::dlsym(lib, "cuDeviceGet"));
  auto bus = reinterpret_cast<BusId>(::dlsym(lib, "cuDeviceGetPCIBusId"));
  int dev = 0;
  char buf[64] = {0};
  if (!get || !bus || get(&dev, device.index()) != 0 || bus(buf, sizeof(buf) - 1, dev) != 0) return "";
  return buf;
}

c10::Device make_current(c10::Device device) {
  if (!device.is_cpu()) at::accelerator::setDeviceIndex(device.index());
  return device;
}

std::string device_identity(const c10::Device& device) {
  std::string bus = device_bus_id(device);
  if (bus.empty()) return "";
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return bus;
  using DeviceGet = int (*)(int*, int);
  using Uuid = int (*)(unsigned char*, int);  // CUuuid is 16 bytes
  auto get = reinterpret_cast<DeviceGet>(::dlsym(lib, "cuDeviceGet"));
  // _v2 reports a MIG instance's own UUID; the first version the parent GPU's.
  auto uuid = reinterpret_cast<Uuid>(::dlsym(lib, "cuDeviceGetUuid_v2"));
  int dev = 0;
  unsigned char u[16] = {0};
  if (!get || !uuid || get(&dev, device.index()) != 0 || uuid(u, dev) != 0) return bus;
  std::string hex;
  for (unsigned char c : u) hex += fmt::format("{:02x}", c);
  return bus + " " + hex;
}

DeviceDescription describe(const c10::Device& device) {
  DeviceDescription d;
  d.kind = c10::DeviceTypeName(device.type(), true);
  if (device.is_cpu()) {
    d.name = cpu_model_name();
  } else if (device.is_cuda()) {
    d.name = cuda_device_name(device.index(), &d.total_memory);
  } else {
    d.name = d.kind;
  }
  return d;
}

// The CUDA caching allocator's own functions rather than
// at::accelerator::getDeviceStats/resetPeakStats, which LibTorch 2.7's
// headers lack: these are in every LibTorch that hpcbench builds with.
size_t peak_memory_bytes(const c10::Device& device) {
  if (device.is_cpu()) return peak_rss_bytes();
#if HPCBENCH_DEVICE_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<size_t>(
        stats.reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
  }
#endif
  return 0;
}

size_t peak_allocated_bytes(const c10::Device& device) {
#if HPCBENCH_DEVICE_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<size_t>(
        stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
  }
#endif
  (void)device;
  return 0;
}

void reset_peak_memory(const c10::Device& device) {
#if HPCBENCH_DEVICE_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
}

struct DeviceTimer::Events {
  c10::Event begin;
  c10::Event end;
  explicit Events(c10::DeviceType t)
      : begin(t, c10::EventFlag::BACKEND_DEFAULT), end(t, c10::EventFlag::BACKEND_DEFAULT) {}
};

DeviceTimer::DeviceTimer(c10::Device device) : device_(device) {
  if (!device_.is_cpu()) events_ = std::make_shared<Events>(device_.type());
}

void DeviceTimer::start() {
  if (events_) {
    events_->begin.record(at::accelerator::getCurrentStream(device_.index()));
  } else {
    t0_ = std::chrono::steady_clock::now();
  }
}

double DeviceTimer::stop() {
  if (events_) {
    events_->end.record(at::accelerator::getCurrentStream(device_.index()));
    events_->end.synchronize();
    return events_->begin.elapsedTime(events_->end);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
}

std::string slow_precision_warning(const c10::Device& device, const std::string& precision) {
  if (!device.is_cpu()) return "";
  const bool fp16 = precision == "fp16", bf16 = precision == "bf16";
  if (!fp16 && !bf16) return "";
  const std::string kind = fp16 ? "fp16" : "bf16";
  if (cpu_has_flag("avx512_" + kind) || cpu_has_flag("amx_" + kind)) return "";
  return fmt::format("--precision {} on this CPU ({}): it has no native {} matrix kernels (no avx512_{} or amx_{} "
                     "in /proc/cpuinfo), so {} runs are far slower than fp32 and their times say nothing about "
                     "GPUs; use {} for CPU timing runs", precision, cpu_model_name(), kind, kind, kind, kind,
                     fp16 ? "fp32 or bf16" : "fp32");
}

}  // namespace hpcbench
