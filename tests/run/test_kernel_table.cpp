// --profile's parts that need no profiler: the step range's grammar and
// checks, and the kernel table's sums on hand-made events, against the
// exact arithmetic of their intervals.
#include "test_catch.h"

#include "core/error.h"
#include "run/kernel_table.h"
#include "train/profile_steps.h"

using namespace hpcbench;
using Catch::Matchers::Contains;

TEST_CASE("--profile's steps: N or A-B from 1, refused otherwise with the flag named") {
  auto r = train::parse_profile_steps("3");
  CHECK((r.first == 3 && r.last == 3 && r.count() == 1));
  r = train::parse_profile_steps("2-5");
  CHECK((r.first == 2 && r.last == 5 && r.count() == 4 && r.contains(5) && !r.contains(6)));
  CHECK(!train::parse_profile_steps("").on());
  CHECK(!train::parse_profile_steps("off").on());
  for (const char* bad : {"0", "x", "-3", "3-", "1-0", "2--3", "1.5", " 2", "3-2"}) {
    INFO(bad);
    CHECK_THROWS_WITH(train::parse_profile_steps(bad), Contains(std::string("--profile ") + bad));
  }
  CHECK_THROWS_WITH(train::parse_profile_steps("4-2"), Contains("ends before it starts"));
  const auto range = train::parse_profile_steps("3-5");
  CHECK_NOTHROW(train::check_profile_steps(range, "3-5", 5, 0));
  CHECK_THROWS_WITH(train::check_profile_steps(range, "3-5", 4, 0), Contains("has 4 optimizer step(s)"));
  CHECK_NOTHROW(train::check_profile_steps(range, "3-5", 9, 2));
  CHECK_NOTHROW(train::check_profile_steps(range, "3-5", 9, 6));
  CHECK_THROWS_WITH(train::check_profile_steps(range, "3-5", 9, 3), Contains("step 3 captures the CUDA graph"));
}

namespace {

double row_ms(const run::KernelTable& t, const std::string& name) {
  for (const auto& r : t.rows)
    if (r.name == name) return r.total_ms;
  return -1;
}

int64_t row_calls(const run::KernelTable& t, const std::string& name) {
  for (const auto& r : t.rows)
    if (r.name == name) return r.calls;
  return -1;
}

}  // namespace

TEST_CASE("host table: self times of nested operators add up to the steps' time with the idle row") {
  // Two steps, [0, 100) and [200, 300) (ns x 1e6 = ms).
  const int64_t ms = 1000000;
  std::vector<std::pair<int64_t, int64_t>> windows{{0, 100 * ms}, {200 * ms, 300 * ms}};
  std::vector<run::TracedEvent> ev{
      {"ProfilerStep#1", false, 7, 0, 100 * ms},
      {"A", false, 7, 10 * ms, 60 * ms},  // children B, C (C holds D)
      {"B", false, 7, 20 * ms, 30 * ms},
      {"C", false, 7, 40 * ms, 50 * ms},
      {"D", false, 7, 42 * ms, 44 * ms},
      {"E", false, 7, 70 * ms, 90 * ms},
      {"B", false, 7, 150 * ms, 170 * ms},  // between the steps: not profiled time
      {"B", false, 7, 190 * ms, 210 * ms},  // half inside the second step
      {"A", false, 7, 250 * ms, 260 * ms},
      {"A", false, 9, 20 * ms, 80 * ms},  // another thread
      {"kernel", true, 0, 20 * ms, 80 * ms},  // a device event: not in the host table
  };
  auto t = run::kernel_table(ev, windows, false, 7);
  CHECK(t.steps == 2);
  CHECK(t.window_ms == 200);
  CHECK(row_ms(t, "A") == 30 + 10);
  CHECK(row_calls(t, "A") == 2);
  CHECK(row_ms(t, "B") == 10 + 10);
  CHECK(row_calls(t, "B") == 2);
  CHECK(row_ms(t, "C") == 8);
  CHECK(row_ms(t, "D") == 2);
  CHECK(row_ms(t, "E") == 20);
  CHECK(row_ms(t, "kernel") == -1);
  CHECK(row_ms(t, "ProfilerStep#1") == -1);
  CHECK(t.busy_ms == 50 + 20 + 10 + 10);
  CHECK(t.sum_ms == t.busy_ms);
  CHECK(t.rows.back().name == "(outside any operator)");
  CHECK(t.rows.back().total_ms == 200 - 90);
  double total = 0, pct = 0;
  for (const auto& r : t.rows) total += r.total_ms, pct += r.percent;
  CHECK(total == Approx(200).epsilon(1e-12));
  CHECK(pct == Approx(100).epsilon(1e-12));
  CHECK(t.rows.front().name == "A");  // largest first
}

TEST_CASE("device table: kernels on two streams, their overlap said, idle is what no kernel covers") {
  const int64_t us = 1000;
  std::vector<std::pair<int64_t, int64_t>> windows{{0, 1000 * us}};
  std::vector<run::TracedEvent> ev{
      {"gemm", true, 0, 100 * us, 400 * us},
      {"gemm", true, 0, 500 * us, 600 * us},
      {"nccl", true, 0, 300 * us, 700 * us},  // another stream: 100 + 100 us overlap the gemms
      {"late", true, 0, 900 * us, 1100 * us},  // half after the step
      {"aten::mm", false, 1, 0, 1000 * us},  // host: not in the device table
  };
  auto t = run::kernel_table(ev, windows, true, 1);
  CHECK(row_ms(t, "gemm") == Approx(0.4));
  CHECK(row_calls(t, "gemm") == 2);
  CHECK(row_ms(t, "nccl") == Approx(0.4));
  CHECK(row_ms(t, "late") == Approx(0.1));
  CHECK(row_ms(t, "aten::mm") == -1);
  CHECK(t.busy_ms == Approx(0.7));  // [100, 700) and [900, 1000)
  CHECK(t.sum_ms == Approx(0.9));
  CHECK(t.overlap_ms == Approx(0.2));
  CHECK(t.rows.back().total_ms == Approx(0.3));
  const auto text = run::kernel_table_text(t, 1);
  CHECK_THAT(text, Contains("(2 more)"));
  CHECK_THAT(text, Contains("streams overlapped for 0.200 ms"));
  const auto csv = run::kernel_table_csv(t);
  CHECK(csv.rfind("name,calls,total_ms,ms_per_step,percent_of_steps\n", 0) == 0);
  CHECK_THAT(csv, Contains("(idle: no kernel running),0,0.300000,0.300000,30.0000"));
}
