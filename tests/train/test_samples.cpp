// Which rows a step trained on (train/samples.h), checked against the rows
// torch's DistributedSampler hands each rank.
#include "test_catch.h"

#include <set>

#include "core/error.h"
#include "distributed/sampler.h"
#include "train/samples.h"

using namespace hpcbench;

namespace {

// Distinct data-set samples in micro-batches [first, first + count) over all
// ranks, counted from the sampler's own index lists.
int64_t counted(int64_t n, int world, int64_t micro_rows, int64_t first, int64_t count) {
  std::set<std::pair<int, int64_t>> seen;  // (rank, place) of real rows
  int64_t samples = 0;
  for (int r = 0; r < world; ++r) {
    dist::DistributedSampler s(n, world, r, /*shuffle=*/false);
    auto idx = s.indices();
    for (int64_t m = first; m < first + count; ++m)
      for (int64_t i = m * micro_rows; i < std::min<int64_t>((m + 1) * micro_rows, static_cast<int64_t>(idx.size()));
           ++i)
        // Without shuffling, place i of rank r is sample i * world + r, a
        // repeat of an earlier one from n on.
        samples += i * world + r < n;
  }
  return samples;
}

}  // namespace

TEST_CASE("step_samples counts real rows: a short last batch, and the sampler's repeats, not at all") {
  // The case: 64 samples at batch 48 is a step of 48 and one of 16.
  CHECK(train::step_samples(64, 1, 48, 0, 1) == 48);
  CHECK(train::step_samples(64, 1, 48, 1, 1) == 16);
  // 65 samples over 2 ranks: 33 rows each, the last row of rank 1 a repeat.
  CHECK(train::step_samples(65, 2, 33, 0, 1) == 65);
  CHECK(train::step_samples(65, 2, 16, 2, 1) == 1);
  for (int64_t n : {1, 7, 64, 65, 100, 129})
    for (int world : {1, 2, 3, 4, 8})
      for (int64_t micro : {1, 5, 16})
        for (int64_t accum : {1, 2}) {
          const int64_t per_rank = train::rows_per_rank(n, world);
          const int64_t micros = (per_rank + micro - 1) / micro;
          int64_t epoch = 0;
          for (int64_t m = 0; m + accum <= micros; m += accum) {
            INFO("n " << n << " world " << world << " micro " << micro << " accum " << accum << " micro-batch " << m);
            CHECK(train::step_samples(n, world, micro, m, accum) == counted(n, world, micro, m, accum));
            epoch += train::step_samples(n, world, micro, m, accum);
          }
          // A whole epoch of whole steps holds each sample once at most.
          if (micros % accum == 0) CHECK(epoch == n);
        }
}

TEST_CASE("check_batch_fits refuses a batch larger than a rank's share, and a step no epoch can hold") {
  CHECK_NOTHROW(train::check_batch_fits(64, 1, 64, 1, 1));
  CHECK_THROWS_WITH(train::check_batch_fits(64, 1, 1024, 1, 1),
                    Catch::Contains("--batch-size 1024 is larger than the data: there are 64 training samples"));
  CHECK_THROWS_WITH(train::check_batch_fits(64, 2, 48, 1, 1),
                    Catch::Contains("each of the 2 ranks gets 32 of the 64 training samples"));
  // dp: 2 devices of one process take 2 x 20 rows a micro-step.
  CHECK_THROWS_WITH(train::check_batch_fits(32, 1, 20, 2, 1), Catch::Contains("40 per micro-step"));
  // 4 micro-batches per step, 3 per epoch: the loop would never take a step.
  CHECK_THROWS_WITH(train::check_batch_fits(24, 1, 8, 1, 4), Catch::Contains("--grad-accum 4"));
  CHECK_NOTHROW(train::check_batch_fits(24, 1, 8, 1, 3));
}
