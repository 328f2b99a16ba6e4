#pragma once
// NVTX ranges in the "hpcbench" domain, so that an Nsight Systems profile
// shows hpcbench's phases (forward, backward, the optimizer, each collective,
// evaluation). NVTX 3 is header-only: with no profiler attached a range costs
// a branch. Built without the headers (HPCBENCH_NVTX undefined) every call
// is empty. Callers pass on = false on CPU runs, where nothing reads them.
#include <cstdint>

#ifdef HPCBENCH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace hpcbench::monitor::nvtx {

#ifdef HPCBENCH_NVTX
inline nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("hpcbench");
  return d;
}
inline nvtxEventAttributes_t attributes(const char* name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  return a;
}
// Thread-bound ranges (push/pop on one thread).
inline void push(const char* name) {
  auto a = attributes(name);
  nvtxDomainRangePushEx(domain(), &a);
}
inline void pop() { nvtxDomainRangePop(domain()); }
// Ranges that may end anywhere (start/end by id).
inline uint64_t start(const char* name) {
  auto a = attributes(name);
  return nvtxDomainRangeStartEx(domain(), &a);
}
inline void end(uint64_t id) { nvtxDomainRangeEnd(domain(), id); }
inline constexpr bool kCompiledIn = true;
#else
inline void push(const char*) {}
inline void pop() {}
inline uint64_t start(const char*) { return 0; }
inline void end(uint64_t) {}
inline constexpr bool kCompiledIn = false;
#endif

// A range over a scope, when `on`.
class Scope {
 public:
  Scope(bool on, const char* name) : on_(on) {
    if (on_) push(name);
  }
  ~Scope() {
    if (on_) pop();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool on_;
};

}  // namespace hpcbench::monitor::nvtx
