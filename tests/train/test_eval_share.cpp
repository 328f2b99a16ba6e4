// The split of the evaluation windows over ranks: the gather puts the
// blocks back in rank order, so they must tile [0, n) in order, and
// padding every block to the largest must be at most one window.
#include "test_catch.h"

#include "train/setup.h"

using namespace hpcbench;

TEST_CASE("evaluation shares tile the windows in rank order, sized as Accelerate splits them") {
  for (int64_t n : {0, 1, 2, 5, 7, 8, 9, 100, 1001})
    for (int world : {1, 2, 3, 4, 8}) {
      INFO("n " << n << ", world " << world);
      int64_t next = 0, largest = 0, smallest = n;
      for (int r = 0; r < world; ++r) {
        auto [b, e] = train::eval_share(n, r, world);
        CHECK(b == next);
        CHECK(e >= b);
        next = e;
        largest = std::max(largest, e - b);
        smallest = std::min(smallest, e - b);
      }
      CHECK(next == n);
      CHECK(largest - smallest <= 1);
      CHECK(largest == (n + world - 1) / world);  // the padded block evaluate_into gathers
    }
  // split_between_processes: 10 over 4 is 3, 3, 2, 2 (the extras go first).
  CHECK(train::eval_share(10, 0, 4) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(train::eval_share(10, 1, 4) == std::pair<int64_t, int64_t>{3, 6});
  CHECK(train::eval_share(10, 2, 4) == std::pair<int64_t, int64_t>{6, 8});
  CHECK(train::eval_share(10, 3, 4) == std::pair<int64_t, int64_t>{8, 10});
}
