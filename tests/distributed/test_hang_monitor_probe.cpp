// The hang monitor never makes the step wait: its completion probes (CUDA
// event queries, which can block while another thread holds the driver's
// context lock) run outside its lock, and settle_after() reuses its events.
#include "test_catch.h"

#include <c10/core/impl/FakeGuardImpl.h>

#include <atomic>
#include <future>
#include <thread>

#include "distributed/hang_monitor.h"

using namespace hpcbench;
using namespace std::chrono_literals;

// Events on CPU: a device type whose events record and query as no-ops.
C10_REGISTER_GUARD_IMPL(PrivateUse1, c10::impl::FakeGuardImpl<c10::DeviceType::PrivateUse1>);

TEST_CASE("a probe that blocks does not block watch(), attach() or settle() on the issuing threads") {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> once{false};
  dist::HangMonitor monitor(60s, [](const std::string&, double) {}, 1ms);
  auto stuck = monitor.watch("all_gather of layer.0");
  monitor.settle(stuck, [&] {
    if (!once.exchange(true)) entered.set_value();
    released.wait();  // a cudaEventQuery waiting for the context lock
    return true;
  });
  entered.get_future().wait();  // the monitor's thread is inside the probe now
  auto issuing = std::async(std::launch::async, [&] {
    auto id = monitor.watch("reduce_scatter of layer.0");
    monitor.attach(id, c10::make_intrusive<c10d::Work>());
    monitor.settle(id, [] { return true; });
    return monitor.watched();
  });
  // Not a timing: the calls either return while the probe is blocked or
  // never do until it is released; the wait only bounds how long the test
  // gives them before it calls that a deadlock.
  const bool returned = issuing.wait_for(20s) == std::future_status::ready;
  release.set_value();
  CHECK(returned);
  CHECK(issuing.get() >= 1);
}

TEST_CASE("settle_after reuses its events instead of creating one per wait") {
  dist::HangMonitor monitor(60s, [](const std::string&, double) {}, 1ms);
  const c10::Stream stream(c10::Stream::DEFAULT, c10::Device(c10::DeviceType::PrivateUse1, 0));
  for (int i = 0; i < 50; ++i) {
    monitor.settle_after(monitor.watch("all_reduce of gradient bucket " + std::to_string(i)), stream);
    for (int polls = 0; monitor.watched() > 0; ++polls) {
      REQUIRE(polls < 20000);  // 20 s: the monitor polls every millisecond
      std::this_thread::sleep_for(1ms);
    }
  }
  // One event in use at a time; a second only when a wait came before the
  // monitor had put the first back (it does so just after forgetting the
  // collective).
  CHECK(monitor.events_created() <= 2);
}
