#pragma once
// A watchdog for collectives whose waits do not block the host. On NCCL a
// wait only orders the compute stream after the collective, so a dead or hung
// peer would leave the host running on until something synchronises, and the
// process group's own watchdog names the collective only by its c10d type and
// sequence number. This one knows what each collective was for ("all_reduce of
// gradient bucket 3 of 5") and reports it when one is still unfinished after
// the timeout.
//
// The monitor never makes the step wait: it queries completion (a CUDA event
// query, which can block while another thread holds the driver's context
// lock) outside its lock, so watch(), attach() and settle() on the issuing
// threads only ever wait for a list operation.
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
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
  // settle() with an event recorded on `stream` now: the events come from a
  // small pool and go back to it once the monitor is done with them, so that
  // a step does not create (and the driver allocate) one per wait.
  void settle_after(uint64_t id, const c10::Stream& stream);
  // A CUDA graph capture is under way in this process (or no longer):
  // while paused no monitor queries a work or an event, which a capture in
  // global mode forbids and whose events recorded in the capture cannot be
  // queried anyway; pausing waits for a round of queries in progress. The
  // captured collectives are not watched (Comm skips them), and no clock
  // runs out meanwhile.
  static void pause_all(bool paused);
  size_t watched();        // collectives not yet seen finished (tests)
  size_t events_created();  // events the pool made so far (tests)

 private:
  using Probe = std::shared_ptr<const std::function<bool()>>;
  struct Entry {
    uint64_t id;
    std::string what;
    std::chrono::steady_clock::time_point start;
    Probe done;  // null while the collective is being issued
  };
  // Free events by device type; shared with the events handed out, which
  // return to it when their last copy goes.
  struct EventPool {
    std::mutex mutex;
    std::vector<std::unique_ptr<c10::Event>> free;
    size_t created = 0;
  };
  void run();

  std::chrono::milliseconds timeout_, poll_;
  OnHang on_hang_;
  std::shared_ptr<EventPool> pool_ = std::make_shared<EventPool>();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::list<Entry> entries_;
  uint64_t next_ = 0;
  bool stop_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace hpcbench::dist
