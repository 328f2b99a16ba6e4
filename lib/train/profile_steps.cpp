#include "train/profile_steps.h"

#include <cctype>

#include "core/error.h"

namespace hpcbench::train {

namespace {

// A positive decimal step number, whole text; 0 when it is not one.
int64_t step_number(const std::string& s) {
  if (s.empty() || s.size() > 12) return 0;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
  return std::stoll(s);
}

}  // namespace

StepRange parse_profile_steps(const std::string& text) {
  if (text.empty() || text == "off") return {};
  const auto dash = text.find('-');
  StepRange r;
  r.first = step_number(text.substr(0, dash));
  r.last = dash == std::string::npos ? r.first : step_number(text.substr(dash + 1));
  if (r.first < 1 || r.last < 1)
    fail("--profile {}: use a step N or a range A-B of optimizer steps, counted from 1 (e.g. --profile 5-7)", text);
  if (r.last < r.first) fail("--profile {}: the range ends before it starts", text);
  return r;
}

void check_profile_steps(const StepRange& range, const std::string& text, int64_t total_steps,
                         int64_t capture_step) {
  if (!range.on()) return;
  if (range.last > total_steps)
    fail("--profile {}: the run has {} optimizer step(s); profile steps up to {}", text, total_steps, total_steps);
  if (range.contains(capture_step))
    fail("--profile {}: step {} captures the CUDA graph, which the profiler must not watch; profile the eager "
         "warm-up steps before it (1-{}) or the replays after it (from {})",
         text, capture_step, capture_step - 1, capture_step + 1);
}

}  // namespace hpcbench::train
