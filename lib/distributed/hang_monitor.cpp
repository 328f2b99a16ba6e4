#include "distributed/hang_monitor.h"

#include <algorithm>
#include <vector>

namespace hpcbench::dist {

namespace {
// Free events kept beyond what is in use: a step has at most a few waits
// whose events the monitor has not yet seen pass.
constexpr size_t kKeptEvents = 32;

// pause_all(): one capture per process pauses every group's monitor.
std::mutex g_pause_mutex;
std::condition_variable g_pause_cv;
bool g_paused = false;
int g_probing = 0;  // monitors in a round of queries
}  // namespace

void HangMonitor::pause_all(bool paused) {
  std::unique_lock<std::mutex> lock(g_pause_mutex);
  g_paused = paused;
  if (paused) g_pause_cv.wait(lock, [] { return g_probing == 0; });
}

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
  entries_.push_back(Entry{next_, std::move(what), std::chrono::steady_clock::now(), nullptr});
  return next_++;
}

void HangMonitor::attach(uint64_t id, c10::intrusive_ptr<c10d::Work> work) {
  settle(id, [work = std::move(work)] { return work->isCompleted(); });
}

void HangMonitor::settle(uint64_t id, std::function<bool()> done) {
  auto probe = std::make_shared<const std::function<bool()>>(std::move(done));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& e : entries_)
      if (e.id == id) {
        std::swap(e.done, probe);
        break;
      }
  }
  // The probe replaced (or this one, for an entry already gone) is dropped
  // here, outside the lock: it may hold the last reference to a work.
}

void HangMonitor::settle_after(uint64_t id, const c10::Stream& stream) {
  std::unique_ptr<c10::Event> event;
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    auto& free = pool_->free;
    auto it = std::find_if(free.begin(), free.end(), [&](const std::unique_ptr<c10::Event>& e) {
      return e->device_type() == stream.device_type() &&
             (e->device_index() < 0 || e->device_index() == stream.device_index());
    });
    if (it != free.end()) {
      event = std::move(*it);
      free.erase(it);
    } else {
      ++pool_->created;
    }
  }
  if (!event) event = std::make_unique<c10::Event>(stream.device_type());
  event->record(stream);
  // Back to the pool when the monitor (and every copy of the probe) is done.
  std::shared_ptr<c10::Event> shared(event.release(), [pool = pool_](c10::Event* e) {
    std::unique_ptr<c10::Event> owned(e);
    std::lock_guard<std::mutex> lock(pool->mutex);
    if (pool->free.size() < kKeptEvents) pool->free.push_back(std::move(owned));
  });
  settle(id, [shared] { return shared->query(); });
}

size_t HangMonitor::watched() {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

size_t HangMonitor::events_created() {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  return pool_->created;
}

void HangMonitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    cv_.wait_for(lock, poll_, [this] { return stop_; });
    if (stop_ || fired_) continue;
    {
      std::lock_guard<std::mutex> pause(g_pause_mutex);
      if (g_paused) continue;
      ++g_probing;
    }
    // Probes are queried without the lock (see the header); copies keep
    // them valid if settle() replaces them meanwhile.
    std::vector<std::pair<uint64_t, Probe>> probes;
    for (auto& e : entries_)
      if (e.done) probes.emplace_back(e.id, e.done);
    lock.unlock();
    std::vector<uint64_t> finished;
    for (auto& [id, probe] : probes)
      if ((*probe)()) finished.push_back(id);
    const auto now = std::chrono::steady_clock::now();
    std::vector<Probe> dropped;
    bool fire = false;
    std::string hung;
    double secs = 0;
    lock.lock();
    for (auto it = entries_.begin(); it != entries_.end();) {
      // A probe that said done was the collective's (its work) or the
      // compute stream's past its wait: finished either way, even if
      // settle() replaced it since.
      if (std::find(finished.begin(), finished.end(), it->id) != finished.end()) {
        dropped.push_back(std::move(it->done));
        it = entries_.erase(it);
        continue;
      }
      if (!fire && now - it->start > timeout_) {
        fire = fired_ = true;
        hung = it->what;
        secs = std::chrono::duration<double>(now - it->start).count();
      }
      ++it;
    }
    lock.unlock();
    // Dropped without the lock: the last reference to a work or an event.
    probes.clear();
    dropped.clear();
    {
      std::lock_guard<std::mutex> pause(g_pause_mutex);
      --g_probing;
    }
    g_pause_cv.notify_all();
    if (fire) on_hang_(hung, secs);
    lock.lock();
  }
}

}  // namespace hpcbench::dist
