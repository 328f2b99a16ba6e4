#pragma once
// --profile: LibTorch's Kineto profiler (CUPTI on a GPU) over the chosen
// optimizer steps of rank 0. Each step is one "ProfilerStep#N" range, the
// name torch.profiler gives its steps (TensorBoard's profile view splits a
// trace by it). At the range's end it leaves the Chrome trace and the
// kernel table (run/kernel_table.h) for the results folder, and says what
// each profiled step was (eager, a CUDA graph's warm-up or its replay).
#include <ATen/record_function.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/profile_steps.h"

namespace torch::autograd::profiler {
struct ProfilerResult;
}

namespace hpcbench::run {

// What the profile leaves: run.json's "profile" and the files beside it.
struct Profile {
  nlohmann::json summary;  // null: nothing profiled
  std::map<std::string, std::string> files;
};

inline constexpr const char* kTraceFile = "profile-rank0.pt.trace.json";
inline constexpr const char* kTableFile = "kernel_table.csv";
inline constexpr const char* kTableTextFile = "kernel_table.txt";

class StepProfiler {
 public:
  // `text`: --profile's value; `active`: this rank profiles (rank 0).
  StepProfiler(const std::string& text, c10::Device device, bool active);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Before the first step, on every rank alike (train/profile_steps.h).
  void check(int64_t total_steps, int64_t capture_step) const;
  // Around step `step` (1-based): begin before its timer starts, end after
  // its synchronisation, with what the step was.
  void begin_step(int64_t step);
  void end_step(int64_t step, const std::string& what);
  // Whether step `step` is profiled: its device work must fall inside its
  // host range, so it is read at its end, not a step late (run/loop.cpp).
  bool watches(int64_t step) const { return active_ && range_.contains(step); }
  // After the loop: the trace and the table (also printed), or nothing.
  Profile take();

 private:
  void start();
  void stop();

  train::StepRange range_;
  std::string text_;
  c10::Device device_;
  bool active_;
  bool running_ = false;
  std::string step_name_;  // the open range's name, alive while it is
  std::unique_ptr<at::RecordFunction> step_scope_;
  nlohmann::json what_ = nlohmann::json::array();
  Profile out_;
};

}  // namespace hpcbench::run
