#include <random>
#include <stdexcept>

#include "test_catch.h"

#include "predict/replay.h"
#include "replay_by_definition.h"

using namespace hpcbench::predict;

TEST_CASE("replay: a collective longer than the compute after it is exposed by the difference") {
  // compute 10, then an all-reduce of 4 issued after it, then 3 more of
  // compute that does not need it, then the step waits: the all-reduce runs
  // 10..14, compute ends at 13, so 1 is exposed, all of it the all-reduce's.
  std::vector<Task> t{{Stream::compute, 10, {}, "backward"},
                      {Stream::comm, 4, {0}, "all_reduce"},
                      {Stream::compute, 3, {}, "backward"},
                      {Stream::compute, 0, {1}, "wait"}};
  auto r = replay(t);
  CHECK(r.makespan == Approx(14));
  CHECK(r.compute == Approx(13));
  CHECK(r.comm == Approx(4));
  CHECK(r.exposed == Approx(1));
  CHECK(r.exposed_by_kind["all_reduce"] == Approx(1));
  // Fully hidden when the compute after it is longer.
  t[2].seconds = 5;
  r = replay(t);
  CHECK(r.exposed == Approx(0));
  CHECK(r.exposed_by_kind.empty());
}

TEST_CASE("replay: prefetched gathers, the comm stream in issue order") {
  // gathers of 2 each for two units of compute 1 each, the second prefetched
  // before the first unit computes: AG0 0..2, AG1 2..4, F0 2..3, F1 4..5.
  std::vector<Task> t{{Stream::comm, 2, {}, "all_gather"},
                      {Stream::comm, 2, {}, "all_gather"},
                      {Stream::compute, 1, {0}, "forward"},
                      {Stream::compute, 1, {1}, "forward"}};
  auto r = replay(t);
  CHECK(r.start[3] == Approx(4));
  CHECK(r.makespan == Approx(5));
  CHECK(r.exposed == Approx(3));
  CHECK(r.exposed_by_kind["all_gather"] == Approx(3));
  // Without prefetch the second gather waits for the first unit's compute
  // (issued after it): AG0 0..2, F0 2..3, AG1 3..5, F1 5..6.
  std::vector<Task> np{{Stream::comm, 2, {}, "all_gather"},
                       {Stream::compute, 1, {0}, "forward"},
                       {Stream::comm, 2, {1}, "all_gather"},
                       {Stream::compute, 1, {2}, "forward"}};
  r = replay(np);
  CHECK(r.makespan == Approx(6));
  CHECK(r.exposed == Approx(4));
}

TEST_CASE("replay: the step waits for collectives still running after the last compute") {
  std::vector<Task> t{{Stream::compute, 1, {}, "backward"}, {Stream::comm, 5, {0}, "reduce_scatter"}};
  auto r = replay(t);
  CHECK(r.makespan == Approx(6));
  CHECK(r.exposed_by_kind["reduce_scatter"] == Approx(5));
}

TEST_CASE("replay: a task may wait only for earlier ones") {
  std::vector<Task> t{{Stream::compute, 1, {1}, "forward"}, {Stream::comm, 1, {}, "all_gather"}};
  CHECK_THROWS_AS(replay(t), std::invalid_argument);
}

TEST_CASE("replay: a wait split among the collectives that ran in it, and the step's end") {
  // AG 0..4 (issued first), F 0..1, RS 4..5 (the comm stream is busy until 4), the wait 1..5:
  // 3 of all_gather, 1 of reduce_scatter; B 5..6, AR 6..9 after it, the optimizer 6..7, and
  // the step waits 7..9 for the all-reduce.
  std::vector<Task> t{{Stream::comm, 4, {}, "all_gather"},     {Stream::compute, 1, {}, "forward"},
                      {Stream::comm, 1, {}, "reduce_scatter"}, {Stream::compute, 0, {2}, "wait"},
                      {Stream::compute, 1, {}, "backward"},    {Stream::comm, 3, {4}, "all_reduce"},
                      {Stream::compute, 1, {}, "optimizer"}};
  auto r = replay(t);
  CHECK(r.makespan == Approx(9));
  CHECK(r.exposed == Approx(6));
  CHECK(r.exposed_by_kind["all_gather"] == Approx(3));
  CHECK(r.exposed_by_kind["reduce_scatter"] == Approx(1));
  CHECK(r.exposed_by_kind["all_reduce"] == Approx(2));
}

TEST_CASE("replay: the same figures, to the last bit, as the replay by its definition") {
  // Random schedules: either stream, durations with zeros among them (a wait is a zero-length
  // compute), each task waiting for up to three earlier ones; the exposed time split by kind is
  // where a faster attribution could part from the scan of every collective for every wait.
  std::mt19937 gen(45);
  std::uniform_real_distribution<double> seconds(0, 3);
  const char* kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast"};
  int exposed_somewhere = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Task> t;
    const size_t n = 1 + gen() % 60;
    for (size_t k = 0; k < n; ++k) {
      const bool comm = gen() % 2 == 0;
      std::vector<size_t> after;
      for (int d = static_cast<int>(gen() % 4); k > 0 && d > 0; --d) after.push_back(gen() % k);
      const double s = gen() % 5 == 0 ? 0.0 : seconds(gen);
      t.emplace_back(comm ? Stream::comm : Stream::compute, s, after, comm ? kinds[gen() % 4] : "backward");
    }
    const auto fast = replay(t);
    const auto reference = hpcbench::test::replay_by_definition(t);
    REQUIRE(fast.start == reference.start);
    REQUIRE(fast.end == reference.end);
    REQUIRE(fast.makespan == reference.makespan);
    REQUIRE(fast.exposed == reference.exposed);
    REQUIRE(fast.exposed_by_kind == reference.exposed_by_kind);
    exposed_somewhere += reference.exposed_by_kind.size() > 1;
  }
  // The schedules exercised the split: many waited on more than one kind of collective.
  CHECK(exposed_somewhere > 500);
}
