#include "train/op_count.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace hpcbench::train {

namespace {

std::atomic<int64_t> g_top{0}, g_all{0};
// HPCBENCH_COUNT_OPS=names: the top-level operations by name as well.
std::atomic<bool> g_names{false};
std::mutex g_names_mutex;
std::map<std::string, int64_t> g_top_names;
// Per thread: autograd and the communication backends run operations on
// their own threads, each with its own nesting.
thread_local int t_depth = 0;

// ATen operators only, as bench/bench_op_count.py filters the profiler's
// events: the autograd engine records each node it runs in the same scope
// ("autograd::engine::evaluate_function: ..."), which is no operator and
// must not hide the operators inside it. LibTorch's Tensor::backward() is
// the operator aten::_backward, which runs the whole backward pass inside
// it, where Python's loss.backward() calls the engine directly: left out
// too, so that backward's operations count as under Python.
bool counted(const at::RecordFunction& fn) {
  const char* name = fn.name();
  return std::strncmp(name, "aten::", 6) == 0 && std::strcmp(name, "aten::_backward") != 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!counted(fn)) return nullptr;
  g_all.fetch_add(1, std::memory_order_relaxed);
  if (t_depth++ == 0) {
    g_top.fetch_add(1, std::memory_order_relaxed);
    if (g_names.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(g_names_mutex);
      ++g_top_names[fn.name()];
    }
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (counted(fn)) --t_depth;
}

}  // namespace

bool count_ops_requested() {
  const char* v = std::getenv("HPCBENCH_COUNT_OPS");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

namespace {
bool names_requested() {
  const char* v = std::getenv("HPCBENCH_COUNT_OPS");
  return v != nullptr && std::string_view(v) == "names";
}
}  // namespace

OpCounter::OpCounter(bool enabled) {
  if (!enabled) return;
  g_names = names_requested();
  take();
  // Operators only (RecordScope::FUNCTION): autograd's nodes and user scopes
  // are not ATen operations and the profiler lists them apart.
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end).scopes({at::RecordScope::FUNCTION}));
}

OpCounter::~OpCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
}

OpCounts OpCounter::take() {
  OpCounts c{g_top.exchange(0, std::memory_order_relaxed), g_all.exchange(0, std::memory_order_relaxed), {}};
  std::lock_guard<std::mutex> lock(g_names_mutex);
  c.top_level_names.swap(g_top_names);
  return c;
}

std::string OpCounter::take_report(int rank, int64_t step) {
  auto c = take();
  std::string out = fmt::format("ops rank {} step {}: {} top-level, {} in all\n", rank, step, c.top_level, c.all);
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (auto& [name, n] : c.top_level_names) by_count.emplace_back(n, name);
  std::sort(by_count.rbegin(), by_count.rend());
  for (auto& [n, name] : by_count) out += fmt::format("ops rank {} step {}:   {:>6} {}\n", rank, step, n, name);
  return out;
}

}  // namespace hpcbench::train
