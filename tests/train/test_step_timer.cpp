// The step timer's hold on c10d works, and its count of collectives it could
// not time. The works here are fakes whose completion, future and duration
// the test decides; CommTiming::WorkDuration runs the NCCL path on CPU.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include "train/step_timer.h"

using namespace hpcbench;

namespace {

// Holds a buffer as c10d's works hold their tensors (ProcessGroupGloo's
// AsyncWork its outputs and its future, ProcessGroupNCCL's WorkNCCL its
// outputs and stashed inputs).
struct FakeWork final : c10d::Work {
  explicit FakeWork(at::Tensor t) : buffer(std::move(t)) {}
  at::Tensor buffer;
  // Shared, so that a test can complete a work it no longer holds (a weak
  // reference would keep the buffer: members go only with the last one).
  std::shared_ptr<std::atomic<bool>> completed = std::make_shared<std::atomic<bool>>(true);
  bool timed = true;
  float ms = 5;
  c10::intrusive_ptr<c10::ivalue::Future> future;  // none: getFuture throws, as Gloo's LambdaWork does
  bool isCompleted() override { return completed->load(); }
  float getDuration() const override {
    if (!timed) throw std::runtime_error("getDuration only works if timing was enabled");
    return ms;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    if (!future) throw std::runtime_error("not implemented");
    return future;
  }
};

// The storage of a buffer only the work refers to: expired once nothing
// holds the work.
c10::weak_intrusive_ptr<c10::StorageImpl> storage_of(const c10::intrusive_ptr<FakeWork>& w) {
  return c10::weak_intrusive_ptr<c10::StorageImpl>(w->buffer.storage().getWeakStorageImpl());
}

const int kQueue = 0;

}  // namespace

TEST_CASE("on host clocks the timer lets go of a work at its wait") {
  train::StepTimer timer(c10::kCPU);
  timer.begin();
  for (bool with_future : {true, false}) {
    DYNAMIC_SECTION((with_future ? "AsyncWork-like, with a future" : "LambdaWork-like, no future")) {
      auto work = c10::make_intrusive<FakeWork>(at::zeros({1 << 16}));
      if (with_future) {
        work->future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
        work->future->markCompleted(c10::IValue(std::vector<at::Tensor>{work->buffer}));
      }
      auto storage = storage_of(work);
      auto h = timer.issuing(&kQueue);
      timer.issued(h, work);
      timer.waiting(h);
      timer.waited(h);
      // The strategy drops its tensor and the Comm its work after the wait.
      work.reset();
      // Before the step ends: the buffer must already be gone, else every
      // unit's gradient buffer would live through the whole backward.
      CHECK(storage.expired());
      CHECK(timer.works_held() == 0);
      auto t = timer.end();
      CHECK(t.collectives == 1);
      CHECK(t.comm_untimed == 0);  // timed by its future or its wait
    }
  }
}

TEST_CASE("on device durations the timer lets go of a work once it finds it complete") {
  train::StepTimer timer(c10::kCPU, train::CommTiming::WorkDuration);
  timer.begin();
  auto a = c10::make_intrusive<FakeWork>(at::zeros({1 << 16}));
  *a->completed = false;  // NCCL: the wait only ordered the compute stream
  a->ms = 5;
  auto a_storage = storage_of(a);
  auto ha = timer.issuing(&kQueue);
  timer.issued(ha, a);
  timer.waiting(ha);
  timer.waited(ha);
  auto a_completed = a->completed;
  a.reset();
  CHECK(timer.works_held() == 1);  // its duration is not readable yet
  CHECK_FALSE(a_storage.expired());
  *a_completed = true;  // the device ran it
  // The next collective's hook finds it complete, reads it, lets it go.
  auto b = c10::make_intrusive<FakeWork>(at::zeros({1 << 16}));
  b->ms = 3;
  auto b_storage = storage_of(b);
  auto hb = timer.issuing(&kQueue);
  CHECK(a_storage.expired());
  timer.issued(hb, b);
  b.reset();
  timer.waiting(hb);
  timer.waited(hb);
  CHECK(b_storage.expired());
  CHECK(timer.works_held() == 0);
  auto t = timer.end();
  CHECK(t.collectives == 2);
  CHECK(t.comm_untimed == 0);
  // One queue: one after the other, 5 ms and 3 ms on the device.
  CHECK(t.comm_ms == Approx(8.0));
}

TEST_CASE("a collective whose duration cannot be read is counted, not silently dropped") {
  train::StepTimer timer(c10::kCPU, train::CommTiming::WorkDuration);
  for (int step = 0; step < 2; ++step) {
    timer.begin();
    auto timed = c10::make_intrusive<FakeWork>(at::zeros({4}));
    timed->ms = 2;
    auto untimed = c10::make_intrusive<FakeWork>(at::zeros({4}));
    untimed->timed = false;
    auto unfinished = c10::make_intrusive<FakeWork>(at::zeros({4}));
    *unfinished->completed = false;
    unfinished->timed = false;  // as cudaEventElapsedTime refuses an unfinished end event
    for (auto& w : {timed, untimed, unfinished}) {
      auto h = timer.issuing(&kQueue);
      timer.issued(h, w);
      timer.waiting(h);
      timer.waited(h);
    }
    auto t = timer.end();
    CHECK(t.collectives == 3);
    CHECK(t.comm_untimed == 2);
    CHECK(t.comm_ms == Approx(2.0));
    CHECK(timer.works_held() == 0);  // nothing carried into the next step
  }
}

TEST_CASE("on host clocks a collective neither completed nor waited for within the step is counted") {
  train::StepTimer timer(c10::kCPU);
  timer.begin();
  auto w = c10::make_intrusive<FakeWork>(at::zeros({4}));  // no future
  auto h = timer.issuing(&kQueue);
  timer.issued(h, w);
  auto t = timer.end();
  CHECK(t.collectives == 1);
  CHECK(t.comm_untimed == 1);
}

// The timing model's serial case on a timeline the test decides: a
// collective the computation waits for from its issue to its completion is
// exposed for all of it but the host's own moment between issuing and
// waiting, and the host's wait returning after the collective finished adds
// nothing. Bounds from the test's own clocks around the calls, so that load
// (which only stretches the moments between them) cannot flip a check.
TEST_CASE("on host clocks a collective waited for from issue to completion is exposed for all of it") {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  train::StepTimer timer(c10::kCPU);
  timer.begin();
  auto work = c10::make_intrusive<FakeWork>(at::zeros({4}));
  work->future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  auto h = timer.issuing(&kQueue);
  auto before_issued = Clock::now();
  timer.issued(h, work);
  timer.waiting(h);
  auto after_waiting = Clock::now();
  // The collective runs while the host waits, then completes; the host's
  // wait returns a while later (Gloo's thread wakes the waiter).
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  work->future->markCompleted(c10::IValue(std::vector<at::Tensor>{work->buffer}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.waited(h);
  auto t = timer.end();
  INFO("comm " << t.comm_ms << " ms, exposed " << t.comm_exposed_ms << " ms");
  CHECK(t.comm_untimed == 0);
  CHECK(t.comm_exposed_ms >= 30);  // at least the wait before completion
  CHECK(t.comm_exposed_ms <= t.comm_ms + 1e-9);  // not the wait after it
  CHECK(t.comm_ms - t.comm_exposed_ms <= ms(after_waiting - before_issued) + 1e-9);
}
