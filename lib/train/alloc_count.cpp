#include "train/alloc_count.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace hpcbench::train {

namespace {

// A block's memory (its base allocator's DataPtr) and the window it was
// made in.
struct Block {
  c10::DataPtr inner;
  int64_t window = -1;
};

// Never destroyed: blocks are freed by tensors that outlive static
// destruction.
struct Books {
  std::mutex mutex;
  int64_t window = -1;  // the open window's id, -1 between windows
  int64_t last = -1;    // the last window opened
  AllocWindow counts;
  std::map<int64_t, int64_t> live;  // blocks alive per window they were made in
  std::unordered_map<void*, Block> blocks;
};
Books& books() {
  static auto* b = new Books;
  return *b;
}

// Keyed by the data pointer, which is also the DataPtr's context, so that
// raw_allocate (oneDNN's scratch memory) works as with the base allocator.
void release(void* data) {
  Block block;
  {
    auto& b = books();
    std::lock_guard<std::mutex> lock(b.mutex);
    auto it = b.blocks.find(data);
    if (it == b.blocks.end()) return;
    block = std::move(it->second);
    b.blocks.erase(it);
    if (b.window >= 0 && block.window != b.window) ++b.counts.freed_older;
    if (block.window >= 0) {
      auto live = b.live.find(block.window);
      if (live != b.live.end() && --live->second == 0) b.live.erase(live);
    }
  }
  // `block.inner` frees the memory here, outside the lock.
}

// The process's CPU allocator, with every block's window recorded.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) override {
    auto inner = base_->allocate(n);
    void* data = inner.get();
    const auto device = inner.device();
    if (data == nullptr) return inner;  // zero bytes: nothing to count
    auto& b = books();
    std::lock_guard<std::mutex> lock(b.mutex);
    const int64_t window = b.window;
    if (window >= 0) {
      ++b.counts.calls;
      ++b.live[window];
    }
    b.blocks[data] = Block{std::move(inner), window};
    return c10::DataPtr(data, data, &release, device);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  c10::Allocator* base_;
};

// Installed before main (and so before any model or buffer exists) when
// asked for: storage made earlier would escape the books.
const bool g_installed = [] {
  if (!check_allocs_requested()) return false;
  static CountingAllocator counting(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&counting, /*priority=*/100);
  return true;
}();

}  // namespace

bool check_allocs_requested() {
  const char* v = std::getenv("HPCBENCH_CHECK_ALLOC");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

AllocCounter::AllocCounter(bool enabled) : enabled_(enabled && g_installed) {}

void AllocCounter::arm() {
  if (!enabled_) return;
  auto& b = books();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.counts = {};
  if (b.last >= 0) {
    auto it = b.live.find(b.last);
    b.counts.kept = it == b.live.end() ? 0 : it->second;
  }
  b.window = ++b.last;
}

AllocWindow AllocCounter::disarm() {
  if (!enabled_) return {};
  auto& b = books();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.window = -1;
  return b.counts;
}

}  // namespace hpcbench::train
