#include "train/op_count.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace hpcbench::train {

namespace {

std::atomic<int64_t> g_top{0}, g_all{0};
// Per thread: autograd and the communication backends run operations on
// their own threads, each with its own nesting.
thread_local int t_depth = 0;

// LibTorch's Tensor::backward() is the operator aten::_backward, which runs
// the whole backward pass inside it; Python's loss.backward() calls the
// autograd engine directly. Not counted and not nesting, so that backward's
// operations count as in Python.
bool is_backward_call(const at::RecordFunction& fn) { return std::strcmp(fn.name(), "aten::_backward") == 0; }

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (is_backward_call(fn)) return nullptr;
  g_all.fetch_add(1, std::memory_order_relaxed);
  if (t_depth++ == 0) g_top.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!is_backward_call(fn)) --t_depth;
}

}  // namespace

bool count_ops_requested() {
  const char* v = std::getenv("HPCBENCH_COUNT_OPS");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

OpCounter::OpCounter(bool enabled) {
  if (!enabled) return;
  take();
  // Operators only (RecordScope::FUNCTION): autograd's nodes and user scopes
  // are not ATen operations and the profiler lists them apart.
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end).scopes({at::RecordScope::FUNCTION}));
}

OpCounter::~OpCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
}

OpCounts OpCounter::take() {
  return OpCounts{g_top.exchange(0, std::memory_order_relaxed), g_all.exchange(0, std::memory_order_relaxed)};
}

}  // namespace hpcbench::train
