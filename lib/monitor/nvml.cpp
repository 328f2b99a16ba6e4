#include "monitor/nvml.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace hpcbench::monitor {

namespace {
// nvml.h's types, as far as these calls need them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
constexpr int NVML_CLOCK_SM = 1;          // nvmlClockType_t
constexpr int NVML_TEMPERATURE_GPU = 0;   // nvmlTemperatureSensors_t
}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;                                   // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                               // nvmlShutdown
  const char* (*error_string)(nvmlReturn_t) = nullptr;                // nvmlErrorString
  nvmlReturn_t (*count)(unsigned int*) = nullptr;                     // nvmlDeviceGetCount_v2
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;      // nvmlDeviceGetHandleByIndex_v2
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;  // nvmlDeviceGetUtilizationRates
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;            // nvmlDeviceGetMemoryInfo
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;             // nvmlDeviceGetPowerUsage (mW)
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;        // nvmlDeviceGetClockInfo (MHz)
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;  // nvmlDeviceGetTemperature (C)
  // nvmlDeviceGetCurrentClocksEventReasons, or its older name
  // nvmlDeviceGetCurrentClocksThrottleReasons on drivers before 535.
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;  // nvmlDeviceGetTotalEnergyConsumption (mJ)
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;           // nvmlDeviceGetPciInfo_v3
  std::vector<nvmlDevice_t> devices;
};

Nvml::Nvml() : api_(std::make_unique<Api>()) {
  const char* override_name = std::getenv("HPCBENCH_NVML_LIBRARY");
  std::string name = override_name && *override_name ? override_name : "libnvidia-ml.so.1";
  handle_ = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = ::dlerror();
    why_not_ = fmt::format("{} not loadable ({})", name, e ? e : "unknown error");
    return;
  }
  auto sym = [&](auto& fn, const char* a, const char* b = nullptr) {
    void* p = ::dlsym(handle_, a);
    if (!p && b) p = ::dlsym(handle_, b);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  auto& a = *api_;
  sym(a.init, "nvmlInit_v2");
  sym(a.shutdown, "nvmlShutdown");
  sym(a.error_string, "nvmlErrorString");
  sym(a.count, "nvmlDeviceGetCount_v2");
  sym(a.handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(a.utilization, "nvmlDeviceGetUtilizationRates");
  sym(a.memory, "nvmlDeviceGetMemoryInfo");
  sym(a.power, "nvmlDeviceGetPowerUsage");
  sym(a.clock, "nvmlDeviceGetClockInfo");
  sym(a.temperature, "nvmlDeviceGetTemperature");
  sym(a.throttle, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(a.energy, "nvmlDeviceGetTotalEnergyConsumption");
  sym(a.pci, "nvmlDeviceGetPciInfo_v3");
  if (!a.init || !a.count || !a.handle) {
    why_not_ = fmt::format("{} lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2", name);
    return;
  }
  auto err = [&](nvmlReturn_t r) {
    return a.error_string ? std::string(a.error_string(r)) : fmt::format("NVML error {}", r);
  };
  if (auto r = a.init(); r != NVML_SUCCESS) {
    why_not_ = fmt::format("nvmlInit failed: {}", err(r));
    return;
  }
  initialised_ = true;
  unsigned n = 0;
  if (auto r = a.count(&n); r != NVML_SUCCESS) {
    why_not_ = fmt::format("nvmlDeviceGetCount failed: {}", err(r));
    initialised_ = false;
    a.shutdown ? (void)a.shutdown() : void();
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t d = nullptr;
    // A device NVML cannot open stays in the list, unread, so that indices
    // remain NVML's.
    if (a.handle(i, &d) != NVML_SUCCESS) d = nullptr;
    a.devices.push_back(d);
  }
  count_ = n;
  if (n == 0) why_not_ = "NVML sees no GPU";
}

Nvml::~Nvml() {
  if (initialised_ && api_->shutdown) api_->shutdown();
  // The library stays loaded: NVML's own threads may outlive shutdown, and
  // unloading under them would crash at exit.
}

std::string Nvml::bus_id(unsigned index) const {
  if (!available() || index >= api_->devices.size() || !api_->devices[index] || !api_->pci) return "";
  nvmlPciInfo_t info{};
  if (api_->pci(api_->devices[index], &info) != NVML_SUCCESS) return "";
  info.busId[sizeof(info.busId) - 1] = 0;
  return info.busId;
}

GpuReading Nvml::read(unsigned index) const {
  GpuReading g;
  if (!available() || index >= api_->devices.size()) return g;
  auto& a = *api_;
  nvmlDevice_t d = a.devices[index];
  if (!d) {
    g.lost = true;
    return g;
  }
  auto ok = [&](nvmlReturn_t r) {
    if (r == NVML_ERROR_GPU_IS_LOST) g.lost = true;
    return r == NVML_SUCCESS;
  };
  if (nvmlUtilization_t u{}; a.utilization && ok(a.utilization(d, &u))) g.util_percent = u.gpu;
  if (nvmlMemory_t m{}; a.memory && ok(a.memory(d, &m))) g.memory_used_bytes = static_cast<int64_t>(m.used);
  if (unsigned mw = 0; a.power && ok(a.power(d, &mw))) g.power_w = mw / 1000.0;
  if (unsigned mhz = 0; a.clock && ok(a.clock(d, NVML_CLOCK_SM, &mhz))) g.sm_clock_mhz = mhz;
  if (unsigned c = 0; a.temperature && ok(a.temperature(d, NVML_TEMPERATURE_GPU, &c))) g.temperature_c = c;
  if (unsigned long long t = 0; a.throttle && ok(a.throttle(d, &t))) g.throttle_reasons = t;
  if (unsigned long long e = 0; a.energy && ok(a.energy(d, &e))) g.energy_mj = e;
  return g;
}

}  // namespace hpcbench::monitor
