#pragma once
// Stopping a job at a step boundary on a signal (core/stop_signal.h), every
// rank at the same one. Ranks get the signal at slightly different times
// (SLURM signals each task, a launcher forwards to each rank), or only one
// of them gets it (a `kill` of one process), and a rank that stopped alone
// would leave the others waiting in the next step's collectives. So the
// ranks agree through the job's store, with no collective and nothing
// added to a step that is not stopped:
//   - a rank that learns of the stop (its own signal, or another rank's
//     request seen by a watcher thread that polls the store) posts how many
//     steps it has begun, and from then on begins no step on its own;
//   - at its next boundary it waits until every rank has posted and stops
//     after the largest count: a rank already inside the next step (blocked
//     in a collective that needs the others) is finished, not abandoned.
// The watcher posts for a rank whose main thread is blocked in a collective,
// so no rank waits for one that cannot answer.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace c10d {
class Store;
}

namespace hpcbench::dist {

class Comm;

class StepStop {
 public:
  // With a communicator of several ranks the ranks agree as above (every
  // rank must make one); without one (a single process, dp) this process's
  // own signal stops it at its next boundary.
  explicit StepStop(std::shared_ptr<Comm> comm);
  ~StepStop();
  StepStop(const StepStop&) = delete;
  StepStop& operator=(const StepStop&) = delete;

  // At a step boundary, `done` steps finished: true when the job stops here.
  // Every rank returns true at the same boundary. Throws UserError when a
  // rank does not post within the collective timeout (it died or hangs).
  bool stop_here(int64_t done);

  bool stopped() const { return stopped_; }
  // The signal that stopped the job: this process's, or the first request's.
  int signal() const;
  // Which rank asked first (-1: this process alone, without a communicator).
  int requested_by() const { return requested_by_; }

 private:
  void watch();
  // Posts `begun` for this rank (and the request, for a signal of its own);
  // the caller holds mutex_.
  void post(c10d::Store& store, int64_t begun);
  std::string key(const std::string& what) const;

  std::shared_ptr<Comm> comm_;
  int rank_ = 0, size_ = 1;
  std::string prefix_;
  std::chrono::milliseconds timeout_{0};
  // Separate connections: the watcher's never waits behind the main
  // thread's, and neither behind the process group's own store traffic.
  struct Stores;
  std::unique_ptr<Stores> stores_;

  std::mutex mutex_;
  std::condition_variable cv_;
  bool quit_ = false;
  bool known_ = false;      // this rank knows the job stops
  bool posted_ = false;
  int64_t begun_ = 0;       // steps this rank has begun
  bool decided_ = false;
  int64_t last_ = 0;        // the step every rank stops after, once decided
  bool stopped_ = false;
  int signal_ = 0;
  int requested_by_ = -1;
  std::thread watcher_;
};

}  // namespace hpcbench::dist
