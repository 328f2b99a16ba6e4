// A stand-in for libnvidia-ml.so.1 that returns scripted values, so that the
// sampler is tested without a GPU. Loaded through HPCBENCH_NVML_LIBRARY; the
// script is the file FAKE_NVML_SCRIPT names, read again at every nvmlInit_v2:
//   init <code>                  nvmlInit_v2's return (default 0)
//   count <n>                    GPUs
//   pci <gpu> <bus id>|E<code>   nvmlDeviceGetPciInfo_v3's busId, or that error
//                                (default "00000000:<gpu + 1, 2 hex digits>:00.0")
//   <gpu> <field> <v1> <v2> ...  the k-th call for that GPU and field returns
//                                v_k (the last one repeats); "E<code>" makes
//                                it return that NVML error instead.
// Fields: util (%), mem (bytes used), power (mW), clock (SM MHz), temp (C),
// throttle (reasons mask), energy (mJ). A field without a line returns
// NVML_ERROR_NOT_SUPPORTED (3).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {
struct Value {
  int error = 0;
  unsigned long long v = 0;
};
struct Script {
  int init = 0;
  unsigned count = 0;
  std::map<std::pair<unsigned, std::string>, std::vector<Value>> fields;
  std::map<std::pair<unsigned, std::string>, size_t> calls;
  std::map<unsigned, std::string> pci;
};
Script& script() {
  static Script s;
  return s;
}
void load() {
  Script s;
  const char* path = std::getenv("FAKE_NVML_SCRIPT");
  std::ifstream in(path ? path : "");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string a;
    if (!(ss >> a) || a[0] == '#') continue;
    if (a == "init") {
      ss >> s.init;
    } else if (a == "count") {
      ss >> s.count;
    } else if (a == "pci") {
      unsigned gpu = 0;
      ss >> gpu >> s.pci[gpu];
    } else {
      unsigned gpu = static_cast<unsigned>(std::stoul(a));
      std::string field, tok;
      ss >> field;
      auto& vs = s.fields[{gpu, field}];
      while (ss >> tok)
        vs.push_back(tok[0] == 'E' ? Value{std::atoi(tok.c_str() + 1), 0} : Value{0, std::stoull(tok)});
    }
  }
  script() = s;
}
// Devices are handles 1..count (never null).
unsigned index_of(void* d) { return static_cast<unsigned>(reinterpret_cast<uintptr_t>(d)) - 1; }
template <typename T>
int next(void* d, const char* field, T* out) {
  auto& s = script();
  std::pair<unsigned, std::string> key{index_of(d), field};
  auto it = s.fields.find(key);
  if (it == s.fields.end() || it->second.empty()) return 3;
  size_t k = s.calls[key]++;
  const Value& v = it->second[std::min(k, it->second.size() - 1)];
  if (v.error) return v.error;
  *out = static_cast<T>(v.v);
  return 0;
}
}  // namespace

extern "C" {
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
__attribute__((visibility("default"))) int nvmlInit_v2() {
  load();
  return script().init;
}
__attribute__((visibility("default"))) int nvmlShutdown() { return 0; }
__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  static thread_local char buf[32];
  std::snprintf(buf, sizeof(buf), "fake NVML error %d", r);
  return buf;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = script().count;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (i >= script().count) return 2;
  *d = reinterpret_cast<void*>(uintptr_t(i) + 1);
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void* d, nvmlUtilization_t* u) {
  u->memory = 0;
  return next(d, "util", &u->gpu);
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* d, nvmlMemory_t* m) {
  m->total = 80ull << 30;
  int r = next(d, "mem", &m->used);
  m->free = m->total - m->used;
  return r;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(void* d, unsigned* mw) { return next(d, "power", mw); }
__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void* d, int type, unsigned* mhz) {
  return type == 1 ? next(d, "clock", mhz) : 3;
}
__attribute__((visibility("default"))) int nvmlDeviceGetTemperature(void* d, int sensor, unsigned* c) {
  return sensor == 0 ? next(d, "temp", c) : 3;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCurrentClocksThrottleReasons(void* d, unsigned long long* r) {
  return next(d, "throttle", r);
}
__attribute__((visibility("default"))) int nvmlDeviceGetTotalEnergyConsumption(void* d, unsigned long long* mj) {
  return next(d, "energy", mj);
}
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* d, nvmlPciInfo_t* p) {
  unsigned i = index_of(d);
  auto it = script().pci.find(i);
  std::string id = it != script().pci.end() ? it->second : "";
  if (!id.empty() && id[0] == 'E') return std::atoi(id.c_str() + 1);
  if (id.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "00000000:%02X:00.0", i + 1);
    id = buf;
  }
  *p = nvmlPciInfo_t{};
  std::snprintf(p->busId, sizeof(p->busId), "%s", id.c_str());
  return 0;
}
}
