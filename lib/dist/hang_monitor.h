#pragma once
// A watchdog for collectives whose waits do not block the host. On NCCL a
// wait only orders the compute stream after the collective, so a dead or hung
// peer would leave the host running on until something synchronises, and the
// process group's own watchdog names the collective only by its c10d type and
// sequence number. This one knows what each collective was for ("all_reduce of
// gradient bucket 3 of 5") and reports it when one is still unfinished after
// the timeout.
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace hpcbench::dist {

class HangMonitor {
 public:
  // Called once, on the monitor's thread, with the collective's description
  // and how long it has been unfinished. The default handler (Comm's) prints
  // the failure and ends the process: the thread that issued the collective
  // may be blocked in a device synchronisation and cannot be interrupted.
  using OnHang = std::function<void(const std::string& what, double seconds)>;

  HangMonitor(std::chrono::milliseconds timeout, OnHang on_hang,
              std::chrono::milliseconds poll = std::chrono::milliseconds(100));
  ~HangMonitor();
  HangMonitor(const HangMonitor&) = delete;
  HangMonitor& operator=(const HangMonitor&) = delete;

  // Starts the clock for a collective about to be issued (issuing itself can
  // hang: NCCL creates its communicator on the first call); attach() gives it
  // the work once there is one. Finished collectives are forgotten.
  uint64_t watch(std::string what);
  void attach(uint64_t id, c10::intrusive_ptr<c10d::Work> work);
  // After the compute stream was made to wait for the collective: `done`
  // (an event recorded behind that wait) replaces the work, so that the
  // monitor does not keep the work, and the tensors it holds, alive longer
  // than its owner does.
  void settle(uint64_t id, std::function<bool()> done);
  size_t watched();  // collectives not yet seen finished (tests)

 private:
  struct Entry {
    uint64_t id;
    std::string what;
    std::chrono::steady_clock::time_point start;
    std::function<bool()> done;  // empty while the collective is being issued
  };
  void run();

  std::chrono::milliseconds timeout_, poll_;
  OnHang on_hang_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::list<Entry> entries_;
  uint64_t next_ = 0;
  bool stop_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace hpcbench::dist
