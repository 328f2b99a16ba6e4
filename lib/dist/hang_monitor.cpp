#include "dist/hang_monitor.h"

namespace hpcbench::dist {

HangMonitor::HangMonitor(std::chrono::milliseconds timeout, OnHang on_hang, std::chrono::milliseconds poll)
    : timeout_(timeout), poll_(poll), on_hang_(std::move(on_hang)), thread_([this] { run(); }) {}

HangMonitor::~HangMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t HangMonitor::watch(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(Entry{next_, std::move(what), std::chrono::steady_clock::now(), {}});
  return next_++;
}

void HangMonitor::attach(uint64_t id, c10::intrusive_ptr<c10d::Work> work) {
  settle(id, [work = std::move(work)] { return work->isCompleted(); });
}

void HangMonitor::settle(uint64_t id, std::function<bool()> done) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_)
    if (e.id == id) e.done = std::move(done);
}

size_t HangMonitor::watched() {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void HangMonitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    cv_.wait_for(lock, poll_, [this] { return stop_; });
    if (stop_ || fired_) continue;
    auto now = std::chrono::steady_clock::now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      // The probes only query events; they never block, so holding the
      // lock across them is fine.
      if (it->done && it->done()) {
        it = entries_.erase(it);
        continue;
      }
      if (now - it->start > timeout_) {
        fired_ = true;
        auto what = it->what;
        double secs = std::chrono::duration<double>(now - it->start).count();
        lock.unlock();
        on_hang_(what, secs);
        lock.lock();
        break;
      }
      ++it;
    }
  }
}

}  // namespace hpcbench::dist
