#include "train/step_timer.h"

#include <ATen/DeviceAccelerator.h>

namespace hpcbench::train {

const char* phase_name(Phase p) {
  static constexpr const char* names[] = {"data", "forward", "backward", "comm", "optimizer"};
  return names[static_cast<size_t>(p)];
}

StepTimer::StepTimer(c10::Device device) : device_(device) {}

void StepTimer::record(Mark& m) {
  if (device_.is_cpu()) {
    m.t = std::chrono::steady_clock::now();
    return;
  }
  m.event = std::make_unique<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  m.event->record(at::accelerator::getCurrentStream(device_.index()));
}

void StepTimer::begin() {
  marks_.clear();
  record(start_);
}

void StepTimer::mark(Phase ended) {
  marks_.push_back(Mark{ended, nullptr, {}});
  record(marks_.back());
}

double StepTimer::end(std::array<double, kPhases>& phase_ms) {
  phase_ms.fill(0);
  if (!device_.is_cpu() && !marks_.empty()) marks_.back().event->synchronize();
  const Mark* prev = &start_;
  double total = 0;
  for (const auto& m : marks_) {
    double ms = device_.is_cpu()
                    ? std::chrono::duration<double, std::milli>(m.t - prev->t).count()
                    : prev->event->elapsedTime(*m.event);
    phase_ms[static_cast<size_t>(m.phase)] += ms;
    total += ms;
    prev = &m;
  }
  return total;
}

}  // namespace hpcbench::train
