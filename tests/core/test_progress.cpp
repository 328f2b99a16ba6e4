// Evaluation's progress: what a line says (windows, rate, time left, all
// derived here from the counts and times fed in) and how often it comes.
#include "test_catch.h"

#include "core/progress.h"

using namespace hpcbench;
using namespace std::chrono_literals;

TEST_CASE("describe: windows done, rate and time left") {
  // 1200 of 5000 in 4 s: 300 windows/s, 3800 left -> 12.67 s.
  CHECK(LoopProgress::describe("windows", 1200, 5000, 4.0) == "1200/5000 windows (24%), 300.0 windows/s, about 13 s left");
  // 100 of 10000 in 10 s: 10/s, 9900 left -> 990 s = 16 min 30 s.
  CHECK(LoopProgress::describe("windows", 100, 10000, 10.0) ==
        "100/10000 windows (1%), 10.0 windows/s, about 16 min 30 s left");
  // 1 of 10000 in 2 s: 0.5/s, 9999 left -> 19998 s = 5 h 33 min.
  CHECK(LoopProgress::describe("windows", 1, 10000, 2.0) == "1/10000 windows (0%), 0.5 windows/s, about 5 h 33 min left");
  // 40 of 1420 in 5.2 s: 1380 left take 179.4 s, which reads 2 min 59 s
  // (rounded once, never "2 min 60 s").
  CHECK(LoopProgress::describe("windows", 40, 1420, 5.2) == "40/1420 windows (3%), 7.7 windows/s, about 2 min 59 s left");
  CHECK(LoopProgress::describe("windows", 5000, 5000, 8.0) == "5000/5000 windows (100%), 625.0 windows/s");
  CHECK(LoopProgress::describe("windows", 0, 5000, 1.0) == "0/5000 windows (0%)");
}

TEST_CASE("describe: large counts in their unit") {
  // 3 MiB of 8 in 2 s: 1.5 MiB/s, 5 MiB left -> 3.3 s.
  CHECK(LoopProgress::describe(ProgressUnit("MiB", 1048576, 1), 3 << 20, 8 << 20, 2.0) ==
        "3.0/8.0 MiB (38%), 1.5 MiB/s, about 3 s left");
}

TEST_CASE("a log line at most every interval, none on ranks that do not report") {
  const auto t0 = LoopProgress::Clock::time_point{};
  LoopProgress p("evaluation", "windows", 1000, /*enabled=*/true, /*tty=*/false, 5s, t0);
  CHECK(p.update(100, t0 + 1s).empty());
  CHECK(p.update(400, t0 + 4900ms).empty());
  CHECK(p.update(500, t0 + 5s) == "500/1000 windows (50%), 100.0 windows/s, about 5 s left");
  CHECK(p.update(600, t0 + 9s).empty());  // 4 s after the last line
  CHECK(p.update(900, t0 + 10s) == "900/1000 windows (90%), 90.0 windows/s, about 1 s left");

  // A detail after the count (training's loss).
  LoopProgress steps("training", "steps", 10, /*enabled=*/true, /*tty=*/false, 0s, t0);
  CHECK(steps.update(5, t0 + 5s, "loss 1.2500") == "5/10 steps (50%), 1.0 steps/s, about 5 s left, loss 1.2500");

  LoopProgress quiet("evaluation", "windows", 1000, /*enabled=*/false, /*tty=*/false, 5s, t0);
  CHECK(quiet.update(900, t0 + 60s).empty());
}
