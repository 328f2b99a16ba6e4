// The batch facts, computed once in build(): what --batch-size and
// --grad-accum become over a strategy's placement, worked by hand.
#include "test_catch.h"

#include "core/error.h"
#include "run/build.h"

using namespace hpcbench;

namespace {

train::TrainConfig config(int64_t batch, int64_t accum, int64_t epochs = 1, int64_t max_steps = 0) {
  train::TrainConfig c;
  c.batch_size = batch;
  c.grad_accum = accum;
  c.epochs = epochs;
  c.max_steps = max_steps;
  return c;
}

strategies::Topology placed(int devices, int replicas, int data_ranks) {
  strategies::Topology t;
  t.devices = devices;
  t.replicas = replicas;
  t.data_ranks = data_ranks;
  return t;
}

}  // namespace

TEST_CASE("one device: 100 features in micro-batches of 8, two per step") {
  auto b = run::plan_batches(config(8, 2, 3), placed(1, 1, 1), 100);
  CHECK(b.per_device == 8);
  CHECK(b.grad_accum == 2);
  CHECK(b.micro_rows == 8);
  CHECK(b.micro_per_epoch == 13);  // ceil(100 / 8)
  CHECK(b.steps_per_epoch == 6);   // 13 micro-steps / 2, the odd one dropped
  CHECK(b.total_steps == 18);      // 3 epochs
  CHECK(b.global_batch == 16);
}

TEST_CASE("four data ranks split the epoch as DistributedSampler pads it") {
  // 102 features over 4 ranks: 26 each (padded from 25.5), 4 micro-batches of 8.
  auto b = run::plan_batches(config(8, 1), placed(1, 4, 4), 102);
  CHECK(b.micro_per_epoch == 4);
  CHECK(b.steps_per_epoch == 4);
  CHECK(b.global_batch == 32);
}

TEST_CASE("a process driving two devices takes --batch-size rows for each") {
  auto b = run::plan_batches(config(4, 1, 1, 5), placed(2, 2, 1), 64);
  CHECK(b.micro_rows == 8);
  CHECK(b.micro_per_epoch == 8);
  CHECK(b.total_steps == 5);  // --max-steps wins over the epochs
  CHECK(b.global_batch == 8);
}

TEST_CASE("pipeline stages that are not replicas do not multiply the batch") {
  // Two stages of one replica: both read the same rows, one data rank.
  auto b = run::plan_batches(config(8, 4), placed(1, 1, 1), 256);
  CHECK(b.global_batch == 32);
  CHECK(b.steps_per_epoch == 8);
}

TEST_CASE("a batch larger than a rank's share is refused, naming the flags") {
  REQUIRE_THROWS_AS(run::plan_batches(config(64, 1), placed(1, 2, 2), 100), UserError);
  try {
    run::plan_batches(config(64, 1), placed(1, 2, 2), 100);
  } catch (const UserError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("--batch-size"));
  }
}
