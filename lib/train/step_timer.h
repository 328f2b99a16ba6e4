#pragma once
// The one timing model of a training step, for every strategy.
//
// Phases: each boundary records a mark; on an accelerator an event on the
// current (compute) stream, on CPU a steady clock (work there is synchronous,
// so the clock is exact). The step synchronises once: end() waits for the
// stamp close() recorded, which the loop does one step late, after the next
// step is queued (run/loop.cpp), so that the device never idles for it.
//
// Communication: the job's Comm reports to this timer (it is the Comm's
// observer) where each collective was issued and where computation waited
// for one; strategies only issue and wait. Per step:
// - comm_ms: the time during which at least one collective was running on
//   the device: the union of the collectives' intervals. On NCCL a
//   collective's interval starts when its stream reaches it (not before the
//   compute stream issued it, not before the previous collective of its group
//   ended) and lasts Work::getDuration(), the time between the start and end
//   events c10d records around it on the NCCL stream. On CPU (Gloo) it runs
//   from the call to the completion of its work, on host clocks.
//   A collective whose duration cannot be read (c10d refused getDuration, or
//   on CPU neither its completion nor a wait on it was seen within the step)
//   is counted in comm_untimed, so that a gap in comm_ms is never silent.
// The timer lets go of each collective's c10d Work, and so of the tensors the
// Work holds (an in-place all-reduce's buffer, a reduce-scatter's input and
// output), as soon as it has what it needs from it: on CPU at the wait, on
// NCCL at the first hook or step end that finds the work completed. Keeping
// them to the step's end would keep every unit's gradient buffers alive
// through the whole backward, memory that no strategy means to hold.
// - comm_exposed_ms: the time during which computation waited for
//   communication: the union of the waits' intervals, each an event pair on
//   the compute stream around the stream-ordered wait (the compute stream's
//   stall) or, on CPU, host clocks around the blocking wait and around the
//   call that issued the collective (the host, which is the computation
//   there, runs nothing else meanwhile).
// Synchronous communication that is not a c10d collective (dp's copies
// between replicas) is bracketed with comm_begin()/comm_end() and counts
// fully as both.
//
// NVTX: on an accelerator each step is a range ("step") holding one range per
// phase, for profilers. A phase is only named when it ends (mark), but a
// range needs its name when it starts, so each range takes the name of the
// phase that ended at the same position in the previous step (every step
// runs the same sequence); the first step's are guessed.
//
// A step captured in a CUDA graph (train/cuda_graph.h, docs/gpu.md): every
// stamp is then a GraphEvent, and the marks made while the step is captured
// become the graph's own event nodes, recorded again by every replay, so the
// phases of a replayed step are measured as those of an eager one. The
// collectives of a capture are only counted: a replay issues them again
// without the host seeing them, so a replayed step reports them as untimed
// (comm_untimed), never as a communication time of zero.
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/comm_observer.h"
#include "results/steps.h"
#include "train/cuda_graph.h"

namespace hpcbench::train {

// The phases and a step's times are the results files' (results/steps.h).
using results::Phase;
using results::kPhases;
using results::phase_name;
using results::StepTimes;

// [begin, end) in ms since the step began.
using Interval = std::pair<double, double>;
// Length of the union of `spans`.
double union_ms(std::vector<Interval> spans);
// Intervals of collectives that run one after another on one stream, from
// when each could start (`ready`, ms since the step began) and how long it
// ran on the device: each starts when it is ready and its predecessor ended.
std::vector<Interval> serialized(const std::vector<double>& ready, const std::vector<double>& duration);

// How a collective's interval is measured: host clocks from the call to the
// work's completion (Gloo), or the work's own device time (NCCL's
// getDuration, with collective timing enabled).
enum class CommTiming { HostClocks, WorkDuration };

class StepTimer final : public dist::CommObserver {
 public:
  // CommTiming follows the device (CPU: host clocks) unless given: the
  // trainer passes HostClocks for Gloo on a GPU (its works have no device
  // duration, and its waits block the host). Tests pass WorkDuration on CPU
  // to run the NCCL path with their own works.
  explicit StepTimer(c10::Device device);
  StepTimer(c10::Device device, CommTiming timing);
  void begin();             // start of a step
  void mark(Phase ended);   // the phase that just ended (phases may repeat: accumulation)
  // Synchronous non-c10d communication (see above).
  void comm_begin();
  void comm_end();
  // The step's host part is over: its last stamp is recorded (everything
  // queued before it is part of the step) and nothing more is attributed
  // to it. Does not wait for the device.
  void close();
  // Waits for the step's last stamp (closing it first if need be); the
  // step's figures. Read one step late (run/loop.cpp), while the device
  // runs the next step, which another timer times.
  StepTimes end();

  // The captured step: from now on every stamp is a GraphEvent (CUDA only).
  void use_graph_events();
  // Around the capture of the step: the marks made in between are the
  // graph's; collectives issued meanwhile are counted, not timed.
  void capture_begin();
  void capture_end();
  // After a replay of the captured step: the graph's marks join this step's.
  void replayed();
  // This timer times the replays of a step `captured` captured, on events
  // of its own (twins of the captured marks' events, which the graph then
  // records in their place, StepGraph::alternate_events): returns the
  // (captured, twin) pairs.
  std::vector<std::pair<const GraphEvent*, const GraphEvent*>> adopt_capture(const StepTimer& captured);

  // dist::CommObserver
  size_t issuing(const void* queue) override;
  void issued(size_t handle, const c10::intrusive_ptr<c10d::Work>& work) override;
  void waiting(size_t handle) override;
  void waited(size_t handle) override;

  // c10d works the timer still holds (tests).
  size_t works_held();

 private:
  using Clock = std::chrono::steady_clock;
  struct Stamp {
    std::unique_ptr<c10::Event> event;  // accelerator
    std::shared_ptr<GraphEvent> graph_event;  // accelerator, with use_graph_events()
    Clock::time_point t;                // always: CPU, and host-clock communication
  };
  struct Collective {
    const void* queue = nullptr;
    Stamp issue, issued;  // issued: CPU only, when the backend call returned
    // WorkDuration: held until it is found completed and its duration read.
    c10::intrusive_ptr<c10d::Work> work;
    double duration_ms = 0;
    bool timed = false;  // WorkDuration: duration_ms was read
    // HostClocks: when the work completed (its future's callback), ns since epoch.
    std::shared_ptr<std::atomic<int64_t>> done_ns;
  };
  struct Wait {
    size_t collective;  // SIZE_MAX: a comm_begin/comm_end bracket
    Stamp begin, end;
  };
  Stamp stamp();
  double since_start(const Stamp& s) const;       // the phases' clock: events on accelerators
  double comm_since_start(const Stamp& s) const;  // the collectives' clock (CommTiming)
  // WorkDuration: reads the durations of the held works that completed and
  // lets go of them. Queries outside the lock: a device query may block on
  // the driver, and autograd's threads call the hooks concurrently. Each
  // call queries only what it may find: the awaited work after a wait, the
  // oldest held works up to the first still running before an issue (a
  // queue completes its works in order), all of them at the step's end;
  // a scan of every held work per collective made the step quadratic.
  enum class Reap { Waited, Oldest, All };
  void reap(Reap which, size_t handle = 0);
  // The pieces of end(), under mutex_ (step_timer.cpp says what each does).
  std::vector<std::pair<Phase, Interval>> phase_times(StepTimes& t);
  void read_held_durations(std::unique_lock<std::mutex>& lock);
  std::pair<std::vector<Interval>, std::vector<Interval>> comm_spans(StepTimes& t, double comm_end);

  void open_phase_range();

  c10::Device device_;
  CommTiming timing_;
  bool nvtx_ = false;
  uint64_t phase_range_ = 0;
  bool phase_open_ = false;
  std::vector<Phase> sequence_, last_sequence_;
  bool active_ = false;
  Stamp start_;
  Stamp closed_;       // close(): what end() waits for
  bool open_ = false;  // begun and not yet closed
  std::vector<std::pair<Phase, Stamp>> marks_;
  std::mutex mutex_;  // the lists below: hooks issue from autograd's threads
  std::vector<Collective> collectives_;
  std::vector<Wait> waits_;
  uint64_t generation_ = 0;  // steps begun: reap() results of an older step are dropped
  bool graph_events_ = false;
  bool capturing_ = false;  // read by the observer calls too, under mutex_
  size_t capture_from_ = 0;  // marks_ before it were made before the capture
  std::vector<std::pair<Phase, std::shared_ptr<GraphEvent>>> captured_marks_;
  int captured_collectives_ = 0;
  bool replayed_ = false;  // this step replayed the graph
  size_t first_held_ = 0;    // collectives_ before it hold no work
  // Device events of finished steps, recorded again by later stamps instead
  // of a new event per stamp (every collective takes two or three).
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<c10::Event>> pool_;
  void recycle(Stamp& s);
  void recycle_step();  // every stamp of the step that end() has read
};

}  // namespace hpcbench::train
