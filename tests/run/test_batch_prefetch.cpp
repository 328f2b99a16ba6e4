// Double-buffered batches (train/batch_ring.h): the step k trains on is the
// sampler's batch k, through an epoch's short last micro-batch and into the
// next epoch, and the losses and gradient norms are bit for bit those of the
// run that gathers each step's batches itself (--no-batch-prefetch), eager
// and graph-ready alike. The reference batch is cut here from the epoch's
// order (train/setup.h) by the step's number alone, not from the loop's own
// record of where its steps came from.
#include "test_catch.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "run/trainer.h"
#include "specs/label.h"
#include "train/setup.h"

using namespace hpcbench;

namespace {

// 22 features in batches of 4: an epoch is 6 micro-batches, its last of 2 rows.
constexpr int64_t kFeatures = 22;

train::TrainConfig tiny(int64_t grad_accum, int64_t steps) {
  train::TrainConfig c;
  c.model = "bert-tiny";
  c.device = "cpu";
  c.synthetic_samples = kFeatures;
  c.max_seq_length = 32;
  c.doc_stride = 8;
  c.max_query_length = 16;
  c.batch_size = 4;
  c.grad_accum = grad_accum;
  c.max_steps = steps;
  c.timing_warmup_steps = 1;
  c.sample_ms = 0;
  c.cache_dir = "none";
  c.dropout = 0;
  c.tensorboard = "off";
  return c;
}

struct Seen {
  int64_t step, micro;
  train::Batch batch;  // cloned: the ring's buffers are reused
};

struct Outcome {
  std::vector<results::StepRecord> steps;
  int64_t mismatched = 0, checked = 0;
};

train::Batch clone(const train::Batch& b) {
  auto c = [](const at::Tensor& t) { return t.defined() ? t.clone() : t; };
  return {c(b.input_ids), c(b.token_type_ids), c(b.attention_mask), c(b.start_positions), c(b.end_positions)};
}

// Whether `seen` holds exactly `want`'s rows; a batch without a mask must be
// one whose rows have no padding.
bool same_rows(const train::Batch& seen, const train::Batch& want) {
  if (seen.size() != want.size()) return false;
  const auto mask = seen.attention_mask.defined() ? seen.attention_mask : at::ones_like(seen.input_ids);
  return seen.input_ids.equal(want.input_ids) && seen.token_type_ids.equal(want.token_type_ids) &&
         mask.equal(want.attention_mask) && seen.start_positions.equal(want.start_positions) &&
         seen.end_positions.equal(want.end_positions);
}

Outcome run_once(train::TrainConfig cfg, bool prefetch) {
  cfg.batch_prefetch = prefetch;
  std::vector<Seen> seen;
  Outcome o;
  run::TrainHooks hooks;
  hooks.batch_seen = [&](int64_t step, int64_t micro, const train::Batch& b) { seen.push_back({step, micro, clone(b)}); };
  hooks.after_training = [&](const run::SampleOrder& so) {
    const int64_t rows = so.micro_rows, ga = so.grad_accum;
    const int64_t micro_per_epoch = (kFeatures + rows - 1) / rows;
    const int64_t steps_per_epoch = micro_per_epoch / ga;
    for (auto& s : seen) {
      const int64_t i = s.step - 1, epoch = i / steps_per_epoch;
      const int64_t first = ((i % steps_per_epoch) * ga + s.micro) * rows;
      auto order = train::epoch_indices(kFeatures, epoch, so.seed, 0, 1);
      auto want = so.data->gather(order.slice(0, first, std::min(first + rows, kFeatures)).contiguous());
      ++o.checked;
      if (!same_rows(s.batch, want)) {
        ++o.mismatched;
        UNSCOPED_INFO("step " << s.step << " micro " << s.micro << " is not the sampler's batch");
      }
    }
  };
  auto out = run::train(cfg, strategies::parse_label("baseline", "--strategy"), {}, hooks);
  REQUIRE(out.result.status == "ok");
  o.steps = out.steps;
  return o;
}

void check_case(const train::TrainConfig& cfg) {
  auto ahead = run_once(cfg, true);
  auto own = run_once(cfg, false);
  CHECK(ahead.checked == cfg.max_steps * cfg.grad_accum);
  CHECK(own.checked == cfg.max_steps * cfg.grad_accum);
  CHECK(ahead.mismatched == 0);
  CHECK(own.mismatched == 0);
  REQUIRE(ahead.steps.size() == own.steps.size());
  for (size_t i = 0; i < own.steps.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(ahead.steps[i].loss == own.steps[i].loss);  // bit for bit
    CHECK(ahead.steps[i].grad_norm == own.steps[i].grad_norm);
    CHECK(ahead.steps[i].samples == own.steps[i].samples);
  }
}

}  // namespace

TEST_CASE("a prefetched step trains on the sampler's batch, bit for bit as one that gathers its own") {
  SECTION("eager, across a short micro-batch and an epoch's end") { check_case(tiny(1, 9)); }
  SECTION("eager, two micro-steps a step") { check_case(tiny(2, 5)); }
  SECTION("graph-ready step (its fixed buffers filled from the ring)") {
    auto cfg = tiny(1, 9);
    cfg.cuda_graph = true;
    check_case(cfg);
  }
}
