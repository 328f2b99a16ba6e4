// A whole run in this process on bert-tiny (a few steps on 16 synthetic
// features): the record, run.json's sections, the steps and the sample
// order all tell the same story, a stop signal ends it at a step boundary,
// and evaluation cuts the dev set's windows as the run cut its training
// features.
#include "test_catch.h"

#include <ATen/Parallel.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "data/features.h"
#include "preflight/resources.h"
#include "run/trainer.h"
#include "stats/stats.h"
#include "specs/label.h"
#include "specs/spec.h"
#include "test_env.h"
#include "train/setup.h"

using namespace hpcbench;

namespace {

train::TrainConfig tiny() {
  train::TrainConfig c;
  c.model = "bert-tiny";
  c.device = "cpu";
  c.synthetic_samples = 16;
  c.max_seq_length = 32;
  c.doc_stride = 8;
  c.max_query_length = 16;
  c.batch_size = 4;
  c.max_steps = 3;
  c.timing_warmup_steps = 1;
  c.sample_ms = 0;
  c.cache_dir = "none";
  return c;
}

strategies::Choice baseline() { return strategies::parse_label("baseline", "--strategy"); }

}  // namespace

TEST_CASE("a run's record, sections and steps agree") {
  auto cfg = tiny();
  run::RunContext ctx;
  ctx.repeat_group = "grp";
  ctx.repeat_index = 3;
  run::SampleOrder order;
  int64_t features = 0;  // the data lives as long as the run: read in the hook
  run::TrainHooks hooks;
  hooks.after_training = [&](const run::SampleOrder& o) {
    order = o;
    features = o.data ? o.data->size() : -1;
  };
  auto out = run::train(cfg, baseline(), ctx, hooks);
  const auto& r = out.result;
  REQUIRE(out.steps.size() == 3);
  CHECK(r.status == "ok");
  CHECK(r.steps == 3);
  CHECK(r.timed_steps == 2);
  CHECK(r.global_batch == 4);
  CHECK(r.batch_per_device == 4);
  CHECK(r.data == train::data_identity(cfg, 16));
  CHECK(r.repeat_group == "grp");
  CHECK(r.repeat_index == 3);
  CHECK(r.cpu_cores == preflight::node_cores());
  CHECK(r.threads_per_rank == at::get_num_threads());
  CHECK(r.final_train_loss == out.steps.back().loss);
  int64_t samples = 0;
  std::vector<double> ms;
  for (size_t i = 1; i < out.steps.size(); ++i) samples += out.steps[i].samples, ms.push_back(out.steps[i].times.ms);
  CHECK(r.samples_timed == samples);
  CHECK(samples == 8);
  CHECK(r.step_ms_median == stats::summarize(ms).median);
  // run.json's "config" is the settings the run header shows, every one.
  std::map<std::string, std::string> config;
  for (auto& [k, v] : out.details["config"].items()) config[k] = v.get<std::string>();
  std::map<std::string, std::string> described;
  for (auto& [k, v] : train::describe(cfg)) described[k] = v;
  CHECK(config == described);
  CHECK(out.details["steps_planned"] == 3);
  CHECK(out.details["timing_warmup_steps_excluded"] == 1);
  // The sample order the data dump writes follows the same batch facts.
  CHECK(order.micro_rows == 4);
  CHECK(order.grad_accum == 1);
  CHECK(order.data_ranks == 1);
  CHECK(order.step_origin.size() == 3);
  CHECK(features == 16);
}

TEST_CASE("a stop at a step boundary ends the run there, interrupted") {
  auto cfg = tiny();
  run::TrainHooks hooks;
  hooks.stop_before = [](int64_t done) { return done >= 2; };
  auto out = run::train(cfg, baseline(), {}, hooks);
  CHECK(out.result.status == "interrupted");
  CHECK(out.result.steps == 2);
  CHECK(out.steps.size() == 2);
  CHECK(out.details["steps_planned"] == 3);

  hooks.stop_before = [](int64_t) { return true; };
  auto none = run::train(cfg, baseline(), {}, hooks);
  CHECK(none.result.status == "interrupted");
  CHECK(none.result.steps == 0);
  CHECK(none.steps.empty());
}

TEST_CASE("evaluation windows the dev set as the run windowed its training data") {
  auto cfg = tiny();
  cfg.max_steps = 1;
  cfg.max_seq_length = 64;
  cfg.doc_stride = 16;  // not the default: the windows differ if evaluation made its own
  cfg.max_query_length = 24;
  // The sample's first two paragraphs: a few dozen windows.
  test::TempDir tmp;
  auto squad = nlohmann::json::parse(std::ifstream(test::squad_file("dev-v1.1-sample.json")));
  auto& paragraphs = squad["data"][0]["paragraphs"];
  paragraphs.erase(paragraphs.begin() + 2, paragraphs.end());
  squad["data"].erase(squad["data"].begin() + 1, squad["data"].end());
  cfg.eval_data = (tmp.path / "dev.json").string();
  std::ofstream(cfg.eval_data) << squad.dump();
  cfg.vocab = test::vocab_file();
  cfg.eval_batch_size = 64;
  auto out = run::train(cfg, baseline(), {});
  const auto windows = data::load_or_build_features(cfg.eval_data, cfg.vocab, train::feature_config(cfg), false, {});
  REQUIRE(out.details.contains("evaluation"));
  CHECK(out.details["evaluation"]["features"] == static_cast<int64_t>(windows.size()));
  CHECK(out.result.val_loss > 0);
  CHECK(out.result.exact_match >= 0);
  CHECK(out.result.eval_forward_s >= 0);
}
