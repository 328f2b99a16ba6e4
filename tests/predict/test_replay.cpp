#include <stdexcept>

#include "test_catch.h"

#include "predict/replay.h"

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
