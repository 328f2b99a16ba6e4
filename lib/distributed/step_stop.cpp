#include "distributed/step_stop.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "core/error.h"
#include "core/stop_signal.h"
#include "distributed/process_group.h"

namespace hpcbench::dist {

struct StepStop::Stores {
  c10::intrusive_ptr<c10d::Store> watcher, main;
};

namespace {

std::string text_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// Every rank makes its StepStops in the same order, so the n-th one of each
// rank shares its keys with the others' n-th, and never with an earlier one's.
int64_t next_instance() {
  static std::atomic<int64_t> n{0};
  return n++;
}

}  // namespace

StepStop::StepStop(std::shared_ptr<Comm> comm) : comm_(std::move(comm)) {
  const int64_t instance = next_instance();
  if (!comm_ || comm_->size() <= 1) return;
  rank_ = comm_->rank();
  size_ = comm_->size();
  timeout_ = comm_->timeout();
  prefix_ = fmt::format("hpcbench/stop/{}/", instance);
  stores_ = std::make_unique<Stores>();
  stores_->watcher = comm_->store()->clone();
  stores_->main = comm_->store()->clone();
  stores_->watcher->setTimeout(timeout_);
  stores_->main->setTimeout(timeout_);
  watcher_ = std::thread([this] { watch(); });
}

StepStop::~StepStop() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::string StepStop::key(const std::string& what) const { return prefix_ + what; }

int StepStop::signal() const { return signal_ ? signal_ : stop_signal(); }

void StepStop::post(c10d::Store& store, int64_t begun) {
  if (posted_) return;
  if (int sig = stop_signal(); sig && !store.check({key("request")}))
    store.set(key("request"), bytes_of(fmt::format("{} {}", rank_, sig)));
  store.set(key("begun/" + std::to_string(rank_)), bytes_of(std::to_string(begun)));
  posted_ = true;
  known_ = true;
}

// Polls for the request: a few store round trips a second per rank, on a
// connection of its own, while the steps run undisturbed.
void StepStop::watch() {
  const auto poll = std::chrono::milliseconds(250 + size_ / 4);
  try {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (cv_.wait_for(lock, poll, [this] { return quit_; })) return;
        if (posted_) return;
      }
      const bool local = stop_signal() != 0;
      if (!local && !stores_->watcher->check({key("request")})) continue;
      if (!local) {
        // Another rank asked: this process now stops as if signalled
        // itself (its evaluation too).
        int who = -1, sig = 0;
        std::sscanf(text_of(stores_->watcher->get(key("request"))).c_str(), "%d %d", &who, &sig);
        note_stop(sig);
      }
      std::lock_guard lock(mutex_);
      post(*stores_->watcher, begun_);
      return;
    }
  } catch (const std::exception& e) {
    // The main thread's wait reports a store that stopped answering; the
    // watcher only says what it saw.
    spdlog::warn("rank {}: watching for a stop request through the store failed: {}", rank_, e.what());
  }
}

bool StepStop::stop_here(int64_t done) {
  if (stopped_) return true;
  if (!stores_) {
    if (stop_signal() == 0) return false;
    signal_ = stop_signal();
    return stopped_ = true;
  }
  if (decided_) {
    if (done < last_) return false;
    return stopped_ = true;
  }
  {
    std::lock_guard lock(mutex_);
    if (!known_ && stop_signal() != 0) post(*stores_->main, done);
    if (!known_) {
      begun_ = done + 1;
      return false;
    }
  }
  // Every rank's count: the job stops after the largest, so that a rank
  // already inside that step finishes it with the others.
  std::vector<std::string> keys;
  for (int r = 0; r < size_; ++r) keys.push_back(key("begun/" + std::to_string(r)));
  try {
    stores_->main->wait(keys, timeout_);
    for (auto& k : keys) last_ = std::max<int64_t>(last_, std::stoll(text_of(stores_->main->get(k))));
    int who = -1, sig = 0;
    std::sscanf(text_of(stores_->main->get(key("request"))).c_str(), "%d %d", &who, &sig);
    requested_by_ = who;
    signal_ = stop_signal() ? stop_signal() : sig;
  } catch (const std::exception& e) {
    std::vector<std::string> missing;
    for (int r = 0; r < size_; ++r) {
      try {
        if (!stores_->main->check({keys[size_t(r)]})) missing.push_back(std::to_string(r));
      } catch (...) {
        missing = {"(the store on rank 0 does not answer)"};
        break;
      }
    }
    fail("stopping at a step boundary after {} on rank {} of {}: rank(s) {} did not answer within the collective "
         "timeout ({:.0f} s): they died or hang; no results were written ({})",
         signal_name(stop_signal()), rank_, size_, fmt::join(missing, ", "),
         std::chrono::duration<double>(timeout_).count(), e.what());
  }
  decided_ = true;
  if (done < last_) {
    std::lock_guard lock(mutex_);
    begun_ = done + 1;
    return false;
  }
  return stopped_ = true;
}

}  // namespace hpcbench::dist
