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

namespace {

std::atomic<bool> g_sync_armed{false};
std::mutex g_sync_mutex;
std::vector<std::string> g_syncs;
// Inside a region whose reads are of host memory by construction: ATen's CPU
// fused AdamW, or a scope the code names "hpcbench::cpu_only_read".
thread_local int t_in_cpu_fused_adamw = 0;
constexpr const char* kCpuOnlyRead = "hpcbench::cpu_only_read";

bool is_sync_op(std::string_view name) {
  static const char* const kSyncs[] = {
      "aten::item",          "aten::_local_scalar_dense", "aten::is_nonzero",       "aten::nonzero",
      "aten::nonzero_numpy", "aten::equal",               "aten::allclose",         "aten::masked_select",
      "aten::unique_dim",    "aten::_unique",             "aten::_unique2",         "aten::unique_consecutive",
      "aten::bincount",      "aten::histc",               "aten::repeat_interleave", "aten::tolist"};
  for (const char* s : kSyncs)
    if (name == s) return true;
  return false;
}

bool first_tensor_on_cpu(const at::RecordFunction& fn) {
  for (const auto& v : fn.inputs())
    if (v.isTensor()) return v.toTensor().device().is_cpu();
  return true;
}

// A wrapped number is a host scalar an operator was given (ddp divides by
// the world size as one, as DDP's reducer does): reading it waits for no
// device, on any device.
bool reads_wrapped_number(const at::RecordFunction& fn) {
  for (const auto& v : fn.inputs())
    if (v.isTensor()) return v.toTensor().unsafeGetTensorImpl()->is_wrapped_number();
  return false;
}

// copy_(self, src): into host memory from a device.
bool device_to_host(const at::RecordFunction& fn) {
  auto in = fn.inputs();
  if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return false;
  return in[0].toTensor().device().is_cpu() && !in[1].toTensor().device().is_cpu();
}

std::unique_ptr<at::ObserverContext> on_sync_start(const at::RecordFunction& fn) {
  if (!g_sync_armed.load(std::memory_order_relaxed)) return nullptr;
  const std::string_view name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (name == kCpuOnlyRead) ++t_in_cpu_fused_adamw;
    return nullptr;
  }
  if (name == "aten::_fused_adamw_" && first_tensor_on_cpu(fn)) {
    ++t_in_cpu_fused_adamw;
    return nullptr;
  }
  bool sync = false;
  if (is_sync_op(name)) sync = t_in_cpu_fused_adamw == 0 && !reads_wrapped_number(fn);
  else if (name == "aten::copy_") sync = device_to_host(fn);
  if (sync) {
    std::lock_guard<std::mutex> lock(g_sync_mutex);
    g_syncs.emplace_back(name);
  }
  return nullptr;
}

void on_sync_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_in_cpu_fused_adamw == 0) return;
  const std::string_view name = fn.name();
  if (name == "aten::_fused_adamw_" || (fn.scope() == at::RecordScope::USER_SCOPE && name == kCpuOnlyRead))
    --t_in_cpu_fused_adamw;
}

}  // namespace

bool check_syncs_requested() {
  const char* v = std::getenv("HPCBENCH_CHECK_SYNC");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

SyncDetector::SyncDetector(bool enabled) {
  if (!enabled) return;
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(on_sync_start, on_sync_end).needsInputs(true).scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

SyncDetector::~SyncDetector() {
  if (handle_ != 0) at::removeCallback(handle_);
  g_sync_armed = false;
}

void SyncDetector::arm() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(g_sync_mutex);
  g_syncs.clear();
  g_sync_armed = true;
}

std::vector<std::string> SyncDetector::disarm() {
  g_sync_armed = false;
  std::lock_guard<std::mutex> lock(g_sync_mutex);
  std::vector<std::string> out;
  out.swap(g_syncs);
  return out;
}

}  // namespace hpcbench::train
