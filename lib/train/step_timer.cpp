#include "train/step_timer.h"

#include <ATen/DeviceAccelerator.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>

#include "monitor/nvtx.h"

namespace hpcbench::train {

namespace {
constexpr size_t kBracket = std::numeric_limits<size_t>::max();

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

double union_ms(std::vector<Interval> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, cs = 0, ce = 0;
  bool open = false;
  for (auto [s, e] : spans) {
    if (e <= s) continue;
    if (!open || s > ce) {
      if (open) total += ce - cs;
      cs = s;
      ce = e;
      open = true;
    } else {
      ce = std::max(ce, e);
    }
  }
  if (open) total += ce - cs;
  return total;
}

std::vector<Interval> serialized(const std::vector<double>& ready, const std::vector<double>& duration) {
  std::vector<Interval> out;
  double prev_end = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < ready.size(); ++i) {
    double s = std::max(ready[i], prev_end);
    out.emplace_back(s, s + duration[i]);
    prev_end = s + duration[i];
  }
  return out;
}

StepTimer::StepTimer(c10::Device device)
    : StepTimer(device, device.is_cpu() ? CommTiming::HostClocks : CommTiming::WorkDuration) {}

StepTimer::StepTimer(c10::Device device, CommTiming timing)
    : device_(device), timing_(timing), nvtx_(!device.is_cpu()) {}

void StepTimer::open_phase_range() {
  const size_t i = sequence_.size();
  Phase next;
  if (i < last_sequence_.size()) {
    next = last_sequence_[i];
  } else if (!last_sequence_.empty()) {
    return;  // past the previous step's last phase: nothing more is expected
  } else if (i == 0) {
    next = Phase::Data;
  } else if (sequence_.back() == Phase::Optimizer) {
    return;
  } else {
    next = static_cast<Phase>(static_cast<size_t>(sequence_.back()) + 1);
  }
  phase_range_ = monitor::nvtx::start(phase_name(next));
  phase_open_ = true;
}

StepTimer::Stamp StepTimer::stamp() {
  Stamp s;
  s.t = Clock::now();  // host clocks time Gloo's collectives on any device
  if (graph_events_) {
    s.graph_event = make_graph_event(device_);
    s.graph_event->record();
  } else if (!device_.is_cpu()) {
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      if (!pool_.empty()) {
        s.event = std::move(pool_.back());
        pool_.pop_back();
      }
    }
    if (!s.event) s.event = std::make_unique<c10::Event>(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    s.event->record(at::accelerator::getCurrentStream(device_.index()));
  }
  return s;
}

void StepTimer::recycle(Stamp& s) {
  if (!s.event) return;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(s.event));
}

// Called where the previous step's stamps are dropped: end() has read them
// (after the step's synchronisation), so their events may be recorded again.
void StepTimer::recycle_step() {
  for (auto& [phase, s] : marks_) recycle(s);
  recycle(start_);
  recycle(closed_);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& c : collectives_) recycle(c.issue), recycle(c.issued);
  for (auto& w : waits_) recycle(w.begin), recycle(w.end);
}

double StepTimer::since_start(const Stamp& s) const {
  if (device_.is_cpu()) return std::chrono::duration<double, std::milli>(s.t - start_.t).count();
  if (s.graph_event) return start_.graph_event->elapsed_ms(*s.graph_event);
  return start_.event->elapsedTime(*s.event);
}

double StepTimer::comm_since_start(const Stamp& s) const {
  if (timing_ == CommTiming::HostClocks) return std::chrono::duration<double, std::milli>(s.t - start_.t).count();
  return since_start(s);
}

void StepTimer::begin() {
  recycle_step();
  marks_.clear();
  if (nvtx_) {
    sequence_.clear();
    monitor::nvtx::push("step");
    open_phase_range();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    collectives_.clear();
    waits_.clear();
    first_held_ = 0;
    ++generation_;
    active_ = true;
  }
  replayed_ = false;
  start_ = stamp();
  open_ = true;
}

void StepTimer::close() {
  if (!open_) return;
  open_ = false;
  closed_ = stamp();
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = false;
  if (nvtx_) {
    if (phase_open_) monitor::nvtx::end(phase_range_);
    phase_open_ = false;
    monitor::nvtx::pop();
    last_sequence_ = sequence_;
  }
}

void StepTimer::mark(Phase ended) {
  marks_.emplace_back(ended, stamp());
  if (nvtx_) {
    if (phase_open_) monitor::nvtx::end(phase_range_);
    phase_open_ = false;
    sequence_.push_back(ended);
    open_phase_range();
  }
}

void StepTimer::use_graph_events() {
  if (device_.is_cpu()) return;  // host clocks are exact there
  graph_events_ = true;
}

void StepTimer::capture_begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = true;
  capture_from_ = marks_.size();
  captured_collectives_ = 0;
}

void StepTimer::capture_end() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = false;
  captured_marks_.clear();
  for (size_t i = capture_from_; i < marks_.size(); ++i)
    captured_marks_.emplace_back(marks_[i].first, marks_[i].second.graph_event);
  // Recorded by the capture, not run: the replay that follows records them.
  marks_.erase(marks_.begin() + static_cast<std::ptrdiff_t>(capture_from_), marks_.end());
}

std::vector<std::pair<const GraphEvent*, const GraphEvent*>> StepTimer::adopt_capture(const StepTimer& captured) {
  std::vector<std::pair<const GraphEvent*, const GraphEvent*>> pairs;
  captured_marks_.clear();
  for (const auto& [phase, event] : captured.captured_marks_) {
    std::shared_ptr<GraphEvent> twin = make_graph_event(device_);
    pairs.emplace_back(event.get(), twin.get());
    captured_marks_.emplace_back(phase, std::move(twin));
  }
  captured_collectives_ = captured.captured_collectives_;
  return pairs;
}

void StepTimer::replayed() {
  for (auto& [phase, event] : captured_marks_) {
    Stamp s;
    s.t = Clock::now();
    s.graph_event = event;
    marks_.emplace_back(phase, std::move(s));
  }
  replayed_ = true;
}

void StepTimer::comm_begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_ || capturing_) return;
  waits_.push_back(Wait{kBracket, stamp(), {}});
}

void StepTimer::comm_end() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_ || capturing_) return;
  for (auto it = waits_.rbegin(); it != waits_.rend(); ++it)
    if (it->collective == kBracket && !it->end.event && it->end.t == Clock::time_point{}) {
      it->end = stamp();
      return;
    }
}

size_t StepTimer::issuing(const void* queue) {
  reap(Reap::Oldest);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_) return kBracket;  // outside a step (set-up, the end-of-run gathers): not timed
  if (capturing_) {
    // A capture records the collective without running it: no event may be
    // queried and no work is complete. Counted, so that replays report it.
    ++captured_collectives_;
    return kBracket;
  }
  Collective c;
  c.queue = queue;
  c.issue = stamp();
  collectives_.push_back(std::move(c));
  return collectives_.size() - 1;
}

void StepTimer::issued(size_t handle, const c10::intrusive_ptr<c10d::Work>& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (handle >= collectives_.size()) return;
  auto& c = collectives_[handle];
  if (timing_ == CommTiming::HostClocks) c.issued = stamp();
  if (timing_ == CommTiming::WorkDuration) {
    c.work = work;
  } else {
    // Gloo completes the work's future on its worker thread when the
    // collective is done: that moment ends its interval.
    // Some of Gloo's work types have no future (its all-gather and
    // reduce-scatter into flat buffers): their interval ends when the wait
    // on them returns, which is at most the wait's own overshoot later.
    try {
      auto future = work->getFuture();
      auto done = std::make_shared<std::atomic<int64_t>>(0);
      c.done_ns = done;
      future->addCallback([done](c10::ivalue::Future&) { done->store(now_ns()); });
    } catch (const std::exception&) {
      c.done_ns.reset();
    }
  }
}

void StepTimer::waiting(size_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (handle >= collectives_.size()) return;
  waits_.push_back(Wait{handle, stamp(), {}});
}

void StepTimer::waited(size_t handle) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (handle >= collectives_.size()) return;
    for (auto it = waits_.rbegin(); it != waits_.rend(); ++it)
      if (it->collective == handle) {
        it->end = stamp();
        break;
      }
  }
  // On NCCL the wait only ordered the compute stream: the work may complete
  // later, and reap() finds it then (at a later issue or the step's end).
  reap(Reap::Waited, handle);
}

size_t StepTimer::works_held() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (auto& c : collectives_) n += c.work ? 1 : 0;
  return n;
}

void StepTimer::reap(Reap which, size_t handle) {
  if (timing_ != CommTiming::WorkDuration) return;
  std::vector<std::pair<size_t, c10::intrusive_ptr<c10d::Work>>> held;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (first_held_ < collectives_.size() && !collectives_[first_held_].work) ++first_held_;
    if (which == Reap::Waited) {
      if (handle < collectives_.size() && collectives_[handle].work) held.emplace_back(handle, collectives_[handle].work);
    } else {
      for (size_t i = first_held_; i < collectives_.size(); ++i)
        if (collectives_[i].work) held.emplace_back(i, collectives_[i].work);
    }
    generation = generation_;
  }
  if (held.empty()) return;
  struct Read {
    size_t index;
    bool timed;
    double ms;
  };
  std::vector<Read> reads;
  for (auto& [i, work] : held) {
    bool done = false;
    try {
      done = work->isCompleted();
    } catch (const std::exception&) {
      done = true;  // failed: its duration will not come; the wait reports the failure
    }
    if (!done) {
      if (which == Reap::Oldest) break;
      continue;
    }
    Read r{i, false, 0};
    try {
      r.ms = work->getDuration();
      r.timed = true;
    } catch (const std::exception&) {
    }
    reads.push_back(r);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return;
  for (auto& r : reads) {
    if (r.index >= collectives_.size()) continue;
    auto& c = collectives_[r.index];
    c.timed = r.timed;
    c.duration_ms = r.ms;
    c.work.reset();
  }
}

// The phases' times from the marks, after the step's closing stamp (the
// step's one synchronisation on an accelerator); returns each phase's span.
std::vector<std::pair<Phase, Interval>> StepTimer::phase_times(StepTimes& t) {
  if (!device_.is_cpu()) {
    if (closed_.graph_event) closed_.graph_event->synchronize();
    else if (closed_.event) closed_.event->synchronize();
  }
  double prev = 0;
  std::vector<std::pair<Phase, Interval>> phase_spans;
  for (const auto& [phase, s] : marks_) {
    double at = since_start(s);
    t.phase_ms[static_cast<size_t>(phase)] += at - prev;
    phase_spans.push_back({phase, {prev, at}});
    prev = at;
  }
  t.ms = prev;
  return phase_spans;
}

// WorkDuration: the compute stream, which waited for every collective
// waited for, has run to its end: what is still held can be read now, or
// never.
void StepTimer::read_held_durations(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  reap(Reap::All);
  lock.lock();
  for (auto& c : collectives_) {
    if (!c.work) continue;
    try {
      c.duration_ms = c.work->getDuration();
      c.timed = true;
    } catch (const std::exception&) {
    }
    c.work.reset();
  }
}

// The step's communication as intervals on the collectives' clock, ending
// at `comm_end` at the latest: when collectives ran (comm) and when the
// computation waited for them (exposed); counts in t what could not be timed.
std::pair<std::vector<Interval>, std::vector<Interval>> StepTimer::comm_spans(StepTimes& t, double comm_end) {
  // Each wait's interval; a collective is done once its wait returns, which
  // bounds a CPU collective whose completion callback had not yet run.
  std::vector<Interval> waits;
  std::vector<double> wait_end(collectives_.size(), -1);
  for (auto& w : waits_) {
    double b = comm_since_start(w.begin);
    bool ended = w.end.event || w.end.t != Clock::time_point{};
    waits.emplace_back(b, ended ? comm_since_start(w.end) : comm_end);
    if (w.collective != kBracket) wait_end[w.collective] = std::max(wait_end[w.collective], waits.back().second);
  }
  std::vector<Interval> comm, exposed;
  std::vector<double> done_at(collectives_.size(), comm_end);
  if (timing_ == CommTiming::HostClocks) {
    const int64_t start_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(start_.t.time_since_epoch()).count();
    for (size_t i = 0; i < collectives_.size(); ++i) {
      auto& c = collectives_[i];
      int64_t done = c.done_ns ? c.done_ns->load() : 0;
      // Neither completed nor waited for within the step: it ran at least
      // until the step's end, how much longer is unknown.
      if (done <= 0 && wait_end[i] < 0) ++t.comm_untimed;
      done_at[i] = done > 0 ? static_cast<double>(done - start_ns) / 1e6 : (wait_end[i] >= 0 ? wait_end[i] : comm_end);
      comm.emplace_back(comm_since_start(c.issue), done_at[i]);
      if (c.issued.t != Clock::time_point{})
        exposed.emplace_back(comm_since_start(c.issue), comm_since_start(c.issued));
    }
  } else {
    // Collectives of one process group run in issue order on its stream.
    std::map<const void*, std::pair<std::vector<double>, std::vector<double>>> queues;
    for (auto& c : collectives_) {
      if (!c.timed) {
        ++t.comm_untimed;  // not finished or not timed: nothing to attribute
        continue;
      }
      auto& q = queues[c.queue];
      q.first.push_back(since_start(c.issue));
      q.second.push_back(c.duration_ms);
    }
    for (auto& [queue, q] : queues)
      for (auto& span : serialized(q.first, q.second)) comm.push_back(span);
  }
  for (size_t k = 0; k < waits_.size(); ++k) {
    auto span = waits[k];
    size_t c = waits_[k].collective;
    if (c == kBracket) {
      comm.push_back(span);
    } else if (timing_ == CommTiming::HostClocks) {
      // The host's wait returns a moment after Gloo finished: the time
      // computation waited ends with the collective.
      span.second = std::min(span.second, done_at[c]);
    }
    exposed.push_back(span);
  }
  return {std::move(comm), std::move(exposed)};
}

StepTimes StepTimer::end() {
  close();
  StepTimes t;
  std::unique_lock<std::mutex> lock(mutex_);
  const auto phase_spans = phase_times(t);
  t.collectives = static_cast<int>(collectives_.size());
  if (replayed_) {
    // The graph issued the captured collectives again, unseen by the host.
    t.collectives += captured_collectives_;
    t.comm_untimed += captured_collectives_;
  }
  if (timing_ == CommTiming::WorkDuration) read_held_durations(lock);
  // Communication is measured on its own clock (host clocks for Gloo, on any
  // device); a step's end on that clock is now, after the synchronisation.
  const double comm_end =
      timing_ == CommTiming::HostClocks ? std::chrono::duration<double, std::milli>(Clock::now() - start_.t).count()
                                        : t.ms;
  const auto [comm, exposed] = comm_spans(t, comm_end);
  t.comm_ms = union_ms(comm);
  t.comm_exposed_ms = union_ms(exposed);
  for (auto& [phase, span] : phase_spans) {
    std::vector<Interval> clipped;
    for (auto [b, e] : exposed) clipped.emplace_back(std::max(b, span.first), std::min(e, span.second));
    t.phase_exposed_ms[static_cast<size_t>(phase)] += union_ms(clipped);
  }
  for (auto& c : collectives_) recycle(c.issue), recycle(c.issued);
  for (auto& w : waits_) recycle(w.begin), recycle(w.end);
  collectives_.clear();
  waits_.clear();
  first_held_ = 0;
  ++generation_;
  return t;
}

}  // namespace hpcbench::train
