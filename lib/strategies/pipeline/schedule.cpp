#include "strategies/pipeline/schedule.h"

#include <algorithm>

#include "core/error.h"

namespace hpcbench::strategies::pipeline {

namespace {

void check_counts(int stage, int stages, int micro) {
  if (stages < 1) fail("--stages {}: must be at least 1", stages);
  if (micro < 1) fail("--micro-batches {}: must be at least 1", micro);
  if (stage < 0 || stage >= stages) fail("internal: stage {} of {}", stage, stages);
}

}  // namespace

ScheduleKind parse_schedule(const std::string& text) {
  if (text == "gpipe") return ScheduleKind::GPipe;
  if (text == "1f1b") return ScheduleKind::OneFOneB;
  fail("--schedule {}: unknown (use gpipe or 1f1b)", text);
}

std::string schedule_name(ScheduleKind kind) { return kind == ScheduleKind::GPipe ? "gpipe" : "1f1b"; }

std::string to_string(const Action& a) {
  // Appended rather than "F" + std::to_string(...): GCC 12 warns (-Wrestrict) on the latter.
  std::string out(1, a.type == Action::Forward ? 'F' : 'B');
  out += std::to_string(a.micro);
  return out;
}

std::vector<Action> stage_order(ScheduleKind kind, int stage, int stages, int micro) {
  check_counts(stage, stages, micro);
  std::vector<Action> out;
  out.reserve(size_t(2 * micro));
  if (kind == ScheduleKind::GPipe) {
    for (int m = 0; m < micro; ++m) out.push_back({Action::Forward, m});
    for (int m = 0; m < micro; ++m) out.push_back({Action::Backward, m});
    return out;
  }
  // Warm-up: the forwards that fill the pipeline below this stage (the last
  // stage needs one before its first backward, the first stage P), then one
  // backward and one forward in turn, then the backwards left.
  const int warmup = std::min(micro, stages - stage);
  int f = 0, b = 0;
  while (f < warmup) out.push_back({Action::Forward, f++});
  while (f < micro) {
    out.push_back({Action::Backward, b++});
    out.push_back({Action::Forward, f++});
  }
  while (b < micro) out.push_back({Action::Backward, b++});
  return out;
}

int in_flight(ScheduleKind kind, int stage, int stages, int micro) {
  int held = 0, peak = 0;
  for (auto& a : stage_order(kind, stage, stages, micro)) {
    held += a.type == Action::Forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

double theoretical_bubble(int stages, int micro) {
  check_counts(0, stages, micro);
  return static_cast<double>(stages - 1) / static_cast<double>(micro + stages - 1);
}

}  // namespace hpcbench::strategies::pipeline
