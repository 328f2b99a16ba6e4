#include "strategies/pipeline/stamps.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Event.h>

#include "core/error.h"
#include "train/cuda_graph.h"

namespace hpcbench::strategies::pipeline {

StepStamps::StepStamps(c10::Device device, bool graph_events)
    : device_(device), graph_events_(graph_events && device.is_cuda()) {}

StepStamps::~StepStamps() = default;

void StepStamps::begin(int micro) {
  current_ = &sets_[micro];
  current_->next = 0;
  current_->busy.clear();
  current_->begin = record();
}

size_t StepStamps::record() {
  if (!current_) fail("internal: a pipeline stage's instant outside its step");
  auto& set = *current_;
  if (set.next == set.at.size()) {
    // The first step of this M: its instants made, then reused every step.
    Instant made;
    if (graph_events_) made.graph_event = train::make_graph_event(device_);
    else if (!device_.is_cpu()) made.event = std::make_unique<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    set.at.push_back(std::move(made));
  }
  auto& i = set.at[set.next];
  if (i.graph_event) i.graph_event->record();
  else if (i.event) i.event->record(at::accelerator::getCurrentStream(device_.index()));
  else i.t = std::chrono::steady_clock::now();
  return set.next++;
}

void StepStamps::end() {
  if (!current_) fail("internal: a pipeline stage's step ended before it began");
  current_->end = record();
}

void StepStamps::replayed() {
  if (!sets_.empty()) current_ = &sets_.rbegin()->second;
}

double StepStamps::ms_between(const Instant& from, const Instant& to) {
  if (from.graph_event && to.graph_event) {
    to.graph_event->synchronize();
    return from.graph_event->elapsed_ms(*to.graph_event);
  }
  if (from.event && to.event) {
    to.event->synchronize();
    return from.event->elapsedTime(*to.event);
  }
  return std::chrono::duration<double, std::milli>(to.t - from.t).count();
}

StageTimeline StepStamps::timeline() {
  StageTimeline t;
  if (!current_) return t;
  const auto& s = *current_;
  const auto& start = s.at[s.begin];
  t.end = ms_between(start, s.at[s.end]);
  for (auto [a, b] : s.busy) t.busy.push_back({ms_between(start, s.at[a]), ms_between(start, s.at[b])});
  return t;
}

}  // namespace hpcbench::strategies::pipeline
