#include "run/step_profile.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "core/bounded_read.h"
#include "core/error.h"
#include "run/kernel_table.h"

namespace hpcbench::run {

namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

namespace {

// libkineto::ActivityType's values (libkineto/include/ActivityType.h, in
// the same order since Kineto's first release): what a device ran.
constexpr uint8_t kGpuMemcpy = 3, kGpuMemset = 4, kConcurrentKernel = 5;
constexpr size_t kTableRowsShown = 25;

bool on_device(const prof::KinetoEvent& e) {
  const auto a = e.activityType();
  return e.deviceType() != c10::DeviceType::CPU && (a == kGpuMemcpy || a == kGpuMemset || a == kConcurrentKernel);
}

std::set<impl::ActivityType> activities(const c10::Device& device) {
  std::set<impl::ActivityType> a{impl::ActivityType::CPU};
  if (device.is_cuda()) a.insert(impl::ActivityType::CUDA);
  return a;
}

// Kineto writes its trace to a file only: written to a private temporary
// file, read back, removed.
std::string trace_text(prof::ProfilerResult& result) {
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) fail("--profile-steps: no folder for the profiler's trace: TMPDIR is no folder ({})", ec.message());
  const auto path = tmp / fmt::format("hpcbench-profile-{}.json", ::getpid());
  result.save(path.string());
  std::string text;
  try {
    text = read_file(path, file_limit::kDataset);
  } catch (...) {
    std::filesystem::remove(path, ec);
    throw;
  }
  std::filesystem::remove(path, ec);
  return text;
}

}  // namespace

StepProfiler::StepProfiler(const std::string& text, c10::Device device, bool active)
    : range_(train::parse_profile_steps(text)), text_(text), device_(device), active_(active && range_.on()) {}

StepProfiler::~StepProfiler() {
  if (!running_) return;
  step_scope_.reset();
  prof::disableProfiler();  // a loop that threw: the profiler must not outlive it
}

void StepProfiler::check(int64_t total_steps, int64_t capture_step) const {
  train::check_profile_steps(range_, text_, total_steps, capture_step);
}

void StepProfiler::start() {
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  prof::prepareProfiler(config, activities(device_));
  prof::enableProfiler(config, activities(device_));
  running_ = true;
}

void StepProfiler::begin_step(int64_t step) {
  if (!active_ || !range_.contains(step)) return;
  if (step == range_.first) start();
  step_name_ = fmt::format("ProfilerStep#{}", step);
  step_scope_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (step_scope_->isActive()) step_scope_->before(std::string_view(step_name_));
}

void StepProfiler::end_step(int64_t step, const std::string& what) {
  if (!running_ || !range_.contains(step)) return;
  step_scope_.reset();
  what_.push_back({{"step", step}, {"what", what}});
  if (step == range_.last) stop();
}

void StepProfiler::stop() {
  auto result = prof::disableProfiler();
  running_ = false;
  std::vector<TracedEvent> events;
  std::vector<std::pair<int64_t, int64_t>> windows;
  uint64_t thread = 0;
  for (const auto& e : result->events()) {
    const auto start = static_cast<int64_t>(e.startNs()), end = static_cast<int64_t>(e.endNs());
    events.push_back({e.name(), on_device(e), e.startThreadId(), start, end});
    if (e.name().rfind("ProfilerStep#", 0) == 0 && e.deviceType() == c10::DeviceType::CPU) {
      windows.emplace_back(start, end);
      thread = e.startThreadId();
    }
  }
  std::sort(windows.begin(), windows.end());
  const auto table = kernel_table(events, windows, !device_.is_cpu(), thread);
  const auto text = kernel_table_text(table, kTableRowsShown);
  const auto trace = trace_text(*result);
  out_.summary = {{"steps", text_},
                  {"profiled", what_},
                  {"device", device_.str()},
                  {"table", table.kind},
                  {"window_ms", table.window_ms},
                  {"busy_ms", table.busy_ms},
                  {"overlap_ms", table.overlap_ms},
                  {"note", "the profiled steps' times include the profiler's cost"}};
  out_.files[kTableFile] = kernel_table_csv(table);
  out_.files[kTableTextFile] = text;
  if (trace.empty()) {
    spdlog::warn("--profile {}: the profiler wrote no trace; only the kernel table is kept", text_);
    out_.summary["trace"] = nullptr;
  } else {
    out_.files[kTraceFile] = trace;
    out_.summary["trace"] = kTraceFile;
  }
  std::string said;
  for (const auto& w : what_) said += fmt::format("{}step {}: {}", said.empty() ? "" : "; ", w["step"].get<int64_t>(),
                                                  w["what"].get<std::string>());
  std::fputs(fmt::format("profile of steps {} ({})\n{}", text_, said, text).c_str(), stdout);
}

Profile StepProfiler::take() {
  if (running_) {
    // The loop ended inside the range (a stop signal): what was profiled
    // so far is kept, and says so.
    step_scope_.reset();
    stop();
    out_.summary["ended_early"] = true;
  }
  return std::move(out_);
}

}  // namespace hpcbench::run
