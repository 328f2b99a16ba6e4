#include "test_catch.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "distributed/hang_monitor.h"

using namespace hpcbench;
using namespace std::chrono_literals;

namespace {
// A collective whose completion the test decides.
struct FakeWork final : c10d::Work {
  std::atomic<bool> done{false};
  bool isCompleted() override { return done.load(); }
};

struct Fired {
  std::mutex m;
  std::string what;
  double secs = 0;
  int count = 0;
};
}  // namespace

TEST_CASE("the hang monitor names a collective unfinished after the timeout, once") {
  Fired fired;
  dist::HangMonitor monitor(200ms, [&](const std::string& what, double secs) {
    std::lock_guard<std::mutex> lock(fired.m);
    fired.what = what;
    fired.secs = secs;
    ++fired.count;
  }, 10ms);
  auto quick = c10::make_intrusive<FakeWork>();
  auto stuck = c10::make_intrusive<FakeWork>();
  monitor.attach(monitor.watch("all_gather of layer.0"), quick);
  monitor.attach(monitor.watch("ddp all_reduce of gradient bucket 3 of 5"), stuck);
  quick->done = true;
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard<std::mutex> lock(fired.m);
    CHECK(fired.count == 0);
  }
  CHECK(monitor.watched() == 1);  // the finished one is forgotten
  std::this_thread::sleep_for(400ms);
  std::lock_guard<std::mutex> lock(fired.m);
  CHECK(fired.count == 1);
  CHECK(fired.what == "ddp all_reduce of gradient bucket 3 of 5");
  CHECK(fired.secs >= 0.2);
}

TEST_CASE("a collective stuck while being issued (no work yet) is caught too") {
  std::atomic<int> count{0};
  std::string seen;
  std::mutex m;
  {
    dist::HangMonitor monitor(50ms, [&](const std::string& what, double) {
      std::lock_guard<std::mutex> lock(m);
      seen = what;
      ++count;
    }, 5ms);
    monitor.watch("all_reduce");  // never attached: NCCL's first call creating its communicator
    std::this_thread::sleep_for(200ms);
  }
  CHECK(count == 1);
  CHECK(seen == "all_reduce");
}

TEST_CASE("finished collectives never fire") {
  std::atomic<int> count{0};
  {
    dist::HangMonitor monitor(30ms, [&](const std::string&, double) { ++count; }, 5ms);
    for (int i = 0; i < 20; ++i) {
      auto w = c10::make_intrusive<FakeWork>();
      w->done = true;
      monitor.attach(monitor.watch(std::string("c").append(std::to_string(i))), w);
    }
    std::this_thread::sleep_for(150ms);
    CHECK(monitor.watched() == 0);
  }
  CHECK(count == 0);
}

TEST_CASE("a settled collective is judged by its probe, not its work") {
  std::atomic<int> count{0};
  std::string seen;
  std::mutex m;
  {
    dist::HangMonitor monitor(60ms, [&](const std::string& what, double) {
      std::lock_guard<std::mutex> lock(m);
      seen = what;
      ++count;
    }, 5ms);
    auto never = c10::make_intrusive<FakeWork>();  // its owner dropped it after the wait
    auto a = monitor.watch("all_gather of layer.1");
    monitor.attach(a, never);
    monitor.settle(a, [] { return true; });  // the compute stream passed its wait
    auto b = monitor.watch("reduce_scatter of layer.1");
    monitor.attach(b, c10::make_intrusive<FakeWork>());
    monitor.settle(b, [] { return false; });  // stuck behind it
    std::this_thread::sleep_for(250ms);
    CHECK(monitor.watched() == 1);
  }
  CHECK(count == 1);
  CHECK(seen == "reduce_scatter of layer.1");
}
