#pragma once
// For tests that measure bytes exactly: a CPU allocator that counts the bytes
// alive and their peak, installed process-wide by counting() (every CPU
// tensor allocated after the first call goes through it).
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace hpcbench::test {

// A CPU allocator that counts the bytes alive and their peak. Its data
// pointer is its own context, as c10's raw_allocate requires, so sizes are
// kept in a table.
struct CountingAllocator final : c10::Allocator {
  static CountingAllocator& get() {
    static CountingAllocator a;
    return a;
  }
  static void release(void* ptr) {
    auto& a = get();
    {
      std::lock_guard<std::mutex> lock(a.mutex);
      auto it = a.sizes.find(ptr);
      if (it != a.sizes.end()) {
        a.live -= static_cast<int64_t>(it->second);
        a.sizes.erase(it);
      }
    }
    c10::free_cpu(ptr);
  }
  c10::DataPtr allocate(size_t n) override {
    void* ptr = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mutex);
      sizes[ptr] = n;
      live += static_cast<int64_t>(n);
      total += static_cast<int64_t>(n);
      peak = std::max(peak, live);
    }
    return c10::DataPtr(ptr, ptr, &release, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
  int64_t now() {
    std::lock_guard<std::mutex> lock(mutex);
    return live;
  }
  int64_t reset_peak() {
    std::lock_guard<std::mutex> lock(mutex);
    return peak = live;
  }
  int64_t peak_now() {
    std::lock_guard<std::mutex> lock(mutex);
    return peak;
  }
  int64_t allocated_total() {  // every byte allocated so far, freed or not
    std::lock_guard<std::mutex> lock(mutex);
    return total;
  }
  std::mutex mutex;
  std::unordered_map<void*, size_t> sizes;
  int64_t live = 0, peak = 0, total = 0;
};

inline CountingAllocator& counting() {
  static bool installed = [] {
    c10::SetCPUAllocator(&CountingAllocator::get(), /*priority=*/255);
    return true;
  }();
  (void)installed;
  return CountingAllocator::get();
}

}  // namespace hpcbench::test
