// The step timer's split of the exposed communication by phase
// (StepTimes::phase_exposed_ms), which the efficiency decomposition
// subtracts from each phase: a wait falls in the phase it happened in, a
// wait across a phase boundary is split at it, and the parts add up to
// comm_exposed_ms. On CPU, with comm_begin/comm_end brackets (synchronous
// communication, counted as exposed from start to end).
#include "test_catch.h"

#include <chrono>
#include <numeric>
#include <thread>

#include "train/step_timer.h"

using namespace hpcbench::train;

namespace {
void wait_a_little() { std::this_thread::sleep_for(std::chrono::milliseconds(3)); }
double sum(const std::array<double, kPhases>& a) { return std::accumulate(a.begin(), a.end(), 0.0); }
}  // namespace

TEST_CASE("exposed communication is split by the phase it fell in and adds up") {
  StepTimer timer{c10::Device(c10::kCPU)};
  timer.begin();
  wait_a_little();
  timer.mark(Phase::Data);
  wait_a_little();
  timer.comm_begin();  // a wait that starts in forward ...
  wait_a_little();
  timer.mark(Phase::Forward);
  wait_a_little();
  timer.comm_end();  // ... and ends in backward
  wait_a_little();
  timer.mark(Phase::Backward);
  timer.comm_begin();  // a wait inside grad_sync alone
  wait_a_little();
  timer.comm_end();
  timer.mark(Phase::GradSync);
  wait_a_little();
  timer.mark(Phase::Optimizer);
  auto t = timer.end();
  const auto& e = t.phase_exposed_ms;
  CHECK(e[size_t(Phase::Data)] == 0);
  CHECK(e[size_t(Phase::Forward)] > 0);
  CHECK(e[size_t(Phase::Backward)] > 0);
  CHECK(e[size_t(Phase::GradSync)] > 0);
  CHECK(e[size_t(Phase::Optimizer)] == 0);
  CHECK(sum(e) == Approx(t.comm_exposed_ms).epsilon(1e-9));
  // No phase holds more exposed time than it lasted.
  for (size_t p = 0; p < kPhases; ++p) CHECK(e[p] <= t.phase_ms[p] + 1e-9);
}
