// The one validation of a run's settings (preflight/run_settings.h): what it
// refuses, on the job's devices rather than on one process, and that a label
// and a flag cannot give one option two values.
#include "test_catch.h"

#include "core/error.h"
#include "preflight/run_settings.h"
#include "specs/registry.h"
#include "train/config.h"

using namespace hpcbench;
using Catch::Contains;

namespace {

train::TrainConfig tiny() {
  train::TrainConfig c;
  c.model = "bert-tiny";
  c.train_data = "synthetic";
  c.synthetic_samples = 64;
  c.batch_size = 8;
  c.max_seq_length = 32;
  c.doc_stride = 16;
  c.max_steps = 2;
  return c;
}

strategies::Choice label(const std::string& l) { return strategies::parse_label(l, "--strategy"); }

}  // namespace

TEST_CASE("a valid run's settings pass at every shape they fit") {
  auto cfg = tiny();
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("baseline"), {1, 1}));
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("ddp"), {1, 4}));
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("ddp"), {2, 4}));
  cfg.batch_size = 4;
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("pipeline:micro-batches=4"), {1, 2}));
}

TEST_CASE("a batch larger than each rank's share of the data is refused on the job's ranks, not one") {
  auto cfg = tiny();
  cfg.synthetic_samples = 8;
  cfg.batch_size = 16;
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("baseline"), {1, 1}),
                    Contains("--batch-size 16") && Contains("larger than the data"));
  // 64 samples over 8 ranks is 8 each: a batch of 16 fits one process, not the job.
  cfg.synthetic_samples = 64;
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("ddp"), {1, 1}));
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("ddp"), {2, 4}),
                    Contains("each of the 8 ranks gets 8"));
  // A pipeline of 2 stages is one replica: all 64 samples are its own.
  CHECK_NOTHROW(preflight::check_run_settings(cfg, label("pipeline:micro-batches=4"), {1, 2}));
  cfg.batch_size = 8;
  cfg.grad_accum = 16;
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("ddp"), {1, 4}), Contains("--grad-accum 16"));
}

TEST_CASE("more pipeline micro-batches than the batch has rows is refused before any rank starts") {
  auto cfg = tiny();
  cfg.batch_size = 4;
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("pipeline:micro-batches=8"), {1, 2}),
                    Contains("--micro-batches 8 with --batch-size 4"));
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("pipeline:micro-batches=8"), {1, 1}),
                    Contains("--micro-batches 8"));
  // The row the predictor would print: refused with the same words.
  CHECK_THROWS_WITH(preflight::check_strategy_fits(label("pipeline:micro-batches=8"), {1, 2}, 4,
                                                   {30522, 128, 2, 2, 512, 512, 2}, "bert-tiny"),
                    Contains("--micro-batches 8 with --batch-size 4"));
}

TEST_CASE("a strategy's layout that does not divide the job is refused with its reason") {
  auto cfg = tiny();
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("tensor:tp-size=3"), {1, 4}),
                    Contains("tensor:tp-size=3") && Contains("1 node(s) x 4"));
  // bert-tiny has 2 layers: 4 pipeline stages cannot be cut from it.
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("pipeline"), {1, 4}),
                    Contains("model bert-tiny"));
}

TEST_CASE("the run's settings themselves are checked the same way (train::validate, the options)") {
  auto cfg = tiny();
  cfg.batch_size = 0;
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, label("ddp"), {1, 2}), Contains("--batch-size 0"));
  cfg = tiny();
  CHECK_THROWS_AS(preflight::check_run_settings(cfg, label("ddp"), {0, 2}), UserError);
}

TEST_CASE("dp computes on the devices its option names, from one process") {
  auto dp = label("dp:replicas=4");
  auto d = preflight::job_devices(dp, {1, 1});
  CHECK(d.nodes == 1);
  CHECK(d.gpus_per_node == 4);
  CHECK(preflight::job_devices(label("ddp"), {2, 3}).world() == 6);
  // 64 samples, 4 devices of one process: a micro-step of 4 x 32 rows is larger than them.
  auto cfg = tiny();
  cfg.batch_size = 32;
  CHECK_THROWS_WITH(preflight::check_run_settings(cfg, dp, d), Contains("larger than the data"));
}

TEST_CASE("a flag that gives an option the label already gives, differently, is refused naming both") {
  const std::map<std::string, std::string> gpipe{{"--schedule", "gpipe"}};
  CHECK_THROWS_WITH(strategies::configure("pipeline:schedule=1f1b", nullptr, gpipe, "--strategy"),
                    Contains("pipeline:schedule=1f1b") && Contains("--schedule gpipe"));
  // The same value twice is one value.
  CHECK(strategies::configure("pipeline:schedule=gpipe", nullptr, gpipe, "--strategy").label() ==
        strategies::configure("pipeline:schedule=gpipe", nullptr, {}, "--strategy").label());
  // A flag for an option the label leaves alone still sets it.
  CHECK_NOTHROW(strategies::configure("pipeline:micro-batches=2", nullptr, gpipe, "--strategy"));
  CHECK_THROWS_WITH(strategies::configure("zero:stage=3", nullptr, {{"--zero-stage", "1"}}, "--strategy"),
                    Contains("--zero-stage 1"));
  CHECK_THROWS_WITH(strategies::configure("pipeline:stages=2", nullptr, {{"--stages", "4"}}, "--strategy"),
                    Contains("--stages 4"));
}
