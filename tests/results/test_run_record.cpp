#include "test_catch.h"

#include "results/run_folder.h"
#include "results/run_record.h"
#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("CSV header and row have one field per column, quoted where needed") {
  results::RunResult r;
  r.strategy = "ddp";
  r.hosts = "n1,n2";  // a comma inside a field must be quoted
  r.samples_per_s = 123.456;
  auto header = results::csv_header();
  auto row = results::csv_row(r);
  auto count = [](const std::string& s) {
    size_t n = 1;
    bool quoted = false;
    for (char c : s) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  CHECK(count(header) == results::columns().size());
  CHECK(count(row) == results::columns().size());
  CHECK(row.find("\"n1,n2\"") != std::string::npos);
  CHECK(row.find(",123.456,") != std::string::npos);
}

TEST_CASE("JSON round trip keeps every column; missing fields keep defaults") {
  results::RunResult r;
  r.strategy = "zero";
  r.world_size = 4;
  r.f1 = 88.5;
  auto back = results::from_json(results::to_json(r));
  CHECK(results::csv_row(back) == results::csv_row(r));
  auto partial = results::from_json(nlohmann::json{{"strategy", "dp"}});
  CHECK(partial.strategy == "dp");
  CHECK(partial.schema_version == 0);
  CHECK(partial.val_loss == -1);
  CHECK(partial.eval_forward_s == -1);  // no evaluation timed: not a zero-second one
}

TEST_CASE("evaluation times have their own columns, apart from the training time") {
  results::RunResult r;
  r.train_time_s = 4;
  r.eval_load_s = 0.5;
  r.eval_forward_s = 12.25;
  r.eval_postprocess_s = 1.5;
  r.eval_metric_s = 0.125;
  auto j = results::to_json(r);
  CHECK(j["train_time_s"] == 4.0);
  CHECK(j["eval_load_s"] == 0.5);
  CHECK(j["eval_forward_s"] == 12.25);
  CHECK(j["eval_postprocess_s"] == 1.5);
  CHECK(j["eval_metric_s"] == 0.125);
  auto header = results::csv_header();
  for (auto name : {"eval_load_s", "eval_forward_s", "eval_postprocess_s", "eval_metric_s"})
    CHECK(header.find(std::string(",") + name + ",") != std::string::npos);
  auto back = results::from_json(j);
  CHECK(back.eval_forward_s == 12.25);
  CHECK(back.eval_metric_s == 0.125);
}

TEST_CASE("run folders are complete when visible and never overwritten") {
  test::TempDir dir;
  results::RunFiles run;
  results::StepRecord s;
  s.step = 1;
  s.loss = 5.5;
  s.lr = 1e-5;
  s.times.ms = 12.0;
  run.steps = {s};
  auto a = results::write_run_folder(dir.path, "run", run);
  auto b = results::write_run_folder(dir.path, "run", run);
  CHECK(a.filename() == "run");
  CHECK(b.filename() == "run-2");
  for (auto& p : {a, b}) {
    CHECK(std::filesystem::exists(p / "summary.csv"));
    CHECK(std::filesystem::exists(p / "run.json"));
    CHECK(read_file(p / "loss.csv") == "step,epoch,loss,lr,ms\n1,0,5.5,1e-05,12.0000\n");
  }
  auto j = nlohmann::json::parse(read_file(b / "run.json"));
  CHECK(j["result"]["run_id"] == "run-2");
  // run.json's steps read back as written.
  auto steps = results::steps_from_json(j["steps"]);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].loss == 5.5);
  CHECK(steps[0].times.ms == 12.0);
  // No temporary folder is left behind.
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) (void)e, ++n;
  CHECK(n == 2);
}
