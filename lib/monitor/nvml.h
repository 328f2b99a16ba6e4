#pragma once
// NVML, loaded at run time with dlopen("libnvidia-ml.so.1") so that the
// binary starts on machines without a driver and links no NVML. Only the few
// functions the sampler calls are declared (nvml.cpp), with nvml.h's
// signatures. HPCBENCH_NVML_LIBRARY names another library to load (the
// tests' scripted fake).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace hpcbench::monitor {

// One reading of one GPU. A field NVML could not give (not supported, an
// error) is empty.
struct GpuReading {
  std::optional<double> util_percent;
  std::optional<int64_t> memory_used_bytes;
  std::optional<double> power_w;
  std::optional<int64_t> sm_clock_mhz;
  std::optional<int64_t> temperature_c;
  std::optional<uint64_t> throttle_reasons;  // NVML's bit mask
  std::optional<uint64_t> energy_mj;         // the device's counter since driver load
  bool lost = false;                         // the device fell off (NVML_ERROR_GPU_IS_LOST)
};

class Nvml {
 public:
  // Loads and initialises NVML; when it cannot, `available()` is false and
  // `why_not()` says why (library missing, nvmlInit failing).
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return handle_ != nullptr && initialised_; }
  const std::string& why_not() const { return why_not_; }
  unsigned device_count() const { return count_; }
  GpuReading read(unsigned index) const;
  // The device's PCI bus id as NVML writes it ("00000000:1B:00.0"); "" when
  // NVML cannot say (an old driver without nvmlDeviceGetPciInfo_v3, an error).
  std::string bus_id(unsigned index) const;

 private:
  struct Api;
  void* handle_ = nullptr;
  bool initialised_ = false;
  unsigned count_ = 0;
  std::string why_not_;
  std::unique_ptr<Api> api_;
};

}  // namespace hpcbench::monitor
