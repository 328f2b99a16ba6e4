// The pipeline strategy through `hpcbench run` trains the baseline's model:
// with dropout off and the same global batch, GPipe and 1F1B over 2 and 4
// stages, several micro-batch counts (one that does not divide the batch),
// an uneven cut, gradient accumulation and a dp2 x pp2 layout end with the
// baseline's weights and losses at the ddp test's tolerance. Layouts that
// cannot be made are refused before anything runs, naming the flag.
#include "test_catch.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "cli_parity.h"
#include "test_env.h"

using namespace hpcbench;
using namespace hpcbench::test::parity;

namespace {

// bert-mini has the 4 encoder layers 4 stages need; three steps keep it
// cheap.
const std::string kMini = " --model bert-mini --max-steps 3";

}  // namespace

TEST_CASE("pipeline over 2 stages (bert-tiny) equals the baseline, both schedules, several micro-batch counts") {
  test::TempDir dir;
  auto base = run(dir.path, "base4", "--strategy baseline --batch-size 4");
  for (std::string s : {"--schedule gpipe --micro-batches 2", "--schedule 1f1b --micro-batches 4",
                        "--schedule 1f1b --micro-batches 3", "--schedule gpipe --micro-batches 1"}) {
    auto name = "pp2-" + std::to_string(std::hash<std::string>{}(s) % 100000);
    auto r = run(dir.path, name, "--strategy pipeline --nproc-per-node 2 --batch-size 4 " + s);
    require_same(r, base, "pipeline 2 stages, " + s);
    CHECK(r.json["result"]["global_batch"] == 4);
    CHECK(r.json["result"]["world_size"] == 2);
    CHECK(r.json["result"]["strategy_options"].get<std::string>().find("layout=pp2") != std::string::npos);
    // Sends and receives are timed as every collective is; the bubble is
    // measured beside its theory, (P-1)/(M+P-1).
    const auto& res = r.json["result"];
    const int m = s.back() - '0';
    CHECK(res["comm_ms"].get<double>() > 0);
    CHECK(res["comm_exposed_ms"].get<double>() > 0);
    CHECK(res["bubble_theory"].get<double>() == Approx(1.0 / (m + 1)));
    CHECK(res["bubble_fraction"].get<double>() > 0);
    CHECK(res["bubble_fraction"].get<double>() < 1);
    for (auto& step : r.json["steps"]) CHECK(step.contains("bubble"));
  }
  CHECK(base.json["result"]["bubble_fraction"].get<double>() == -1);
  // With recomputation: each stage's layers run their forward again in backward.
  require_same(run(dir.path, "pp2-ckpt", "--strategy pipeline --nproc-per-node 2 --batch-size 4 --micro-batches 2 "
                                         "--activation-checkpointing"),
               base, "pipeline 2 stages, activation checkpointing");
  // With accumulation: two micro-steps, each pipelined, then one update.
  require_same(run(dir.path, "pp2-acc", "--strategy pipeline --nproc-per-node 2 --batch-size 2 --grad-accum 2 "
                                        "--micro-batches 2"),
               base, "pipeline 2 stages, accumulation 2");
}

TEST_CASE("pipeline over 4 stages and an uneven cut (bert-mini) equal the baseline") {
  test::TempDir dir;
  auto base = run(dir.path, "base4m", "--strategy baseline --batch-size 4" + kMini);
  require_same(run(dir.path, "pp4g", "--strategy pipeline --nproc-per-node 4 --batch-size 4 --schedule gpipe "
                                     "--micro-batches 4" + kMini),
               base, "pipeline 4 stages, gpipe, M=4");
  require_same(run(dir.path, "pp4f", "--strategy pipeline --nproc-per-node 4 --batch-size 4 --schedule 1f1b "
                                     "--micro-batches 2" + kMini),
               base, "pipeline 4 stages, 1f1b, M=2");
  auto cut = run(dir.path, "pp2c", "--strategy pipeline --nproc-per-node 2 --batch-size 4 --stage-layers 3,1 "
                                   "--micro-batches 4" + kMini);
  require_same(cut, base, "pipeline 2 stages cut 3,1");
  CHECK(cut.json["result"]["strategy_options"].get<std::string>().find("stage-layers=3/1") != std::string::npos);
}

TEST_CASE("dp2 x pp2 on 4 ranks equals the baseline with the two replicas' batch") {
  test::TempDir dir;
  auto base = run(dir.path, "base4", "--strategy baseline --batch-size 4");
  auto r = run(dir.path, "dp2pp2", "--strategy pipeline --nproc-per-node 4 --stages 2 --dp-size 2 --batch-size 2 "
                                   "--micro-batches 2");
  require_same(r, base, "pipeline dp2 x pp2");
  CHECK(r.json["result"]["global_batch"] == 4);
  CHECK(r.json["result"]["strategy_options"].get<std::string>().find("layout=dp2-pp2") != std::string::npos);

  // predict from the baseline: the layout's memory is the run's own memory
  // model, and a layout the model cannot be cut into is a row left out with
  // its reason.
  auto csv = dir.path / "predict.csv";
  auto p = test::run_command(bin() + " predict --baseline " + (dir.path / "results-base4" / "base4").string() +
                             " --system " + (test::source_dir() / "configs" / "systems" / "dgx-a100.toml").string() +
                             " --allow-device-mismatch --strategies pipeline:stages=2,dp-size=2,micro-batches=2,"
                             "pipeline --gpus-per-node 4 --csv " + csv.string());
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK(p.output.find("not predicted: --strategy pipeline") != std::string::npos);
  CHECK(p.output.find("--stages 4: the model has 2 encoder layers") != std::string::npos);
  auto rows = test::slurp(csv);
  INFO(rows);
  REQUIRE(rows.find("pipeline:stages=2") != std::string::npos);
  auto line = rows.substr(rows.find("pipeline:stages=2"));
  line = line.substr(0, line.find('\n'));
  CHECK(line.find(",1,4,4,1,") != std::string::npos);  // nodes, gpus per node, world, accumulation
  CHECK(line.find(fmt::format(",{:.0f},", r.json["result"]["model_state_theory_bytes"].get<double>())) !=
        std::string::npos);  // memory_persistent_bytes
}

TEST_CASE("pipeline layouts that cannot be made are refused before training, naming the flag") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto refused = [&](const std::string& args) {
    auto r = test::run_command(bin() + " run" + kCommon + " --max-steps 2 --strategy pipeline " + args +
                               " --results-dir " + results.string());
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK(test::entries(results) == 0);
    return r.output;
  };
  // More stages than bert-tiny's 2 layers.
  CHECK_THAT(refused("--nproc-per-node 4 --batch-size 4"), Catch::Contains("--stages 4") &&
                                                                Catch::Contains("2 encoder layers"));
  // Stages that do not divide the world, or do not multiply with --dp-size to it.
  CHECK_THAT(refused("--nproc-per-node 2 --stages 3"), Catch::Contains("--stages 3"));
  CHECK_THAT(refused("--nproc-per-node 4 --stages 2 --dp-size 3"),
             Catch::Contains("--stages 2 x --dp-size 3") && Catch::Contains("the job has 4"));
  // Counts that do not add up to the layers, or one per stage.
  CHECK_THAT(refused("--nproc-per-node 2 --stage-layers 2,1"), Catch::Contains("add up to 3") &&
                                                                    Catch::Contains("2 encoder layers"));
  CHECK_THAT(refused("--nproc-per-node 2 --stages 2 --stage-layers 1,1,1"), Catch::Contains("3 counts for 2 stages"));
  CHECK_THAT(refused("--nproc-per-node 2 --micro-batches 0"), Catch::Contains("--micro-batches 0"));
  CHECK_THAT(refused("--nproc-per-node 2 --batch-size 2 --micro-batches 4"),
             Catch::Contains("--micro-batches 4 with --batch-size 2"));
  CHECK_THAT(refused("--nproc-per-node 2 --schedule interleaved"), Catch::Contains("--schedule interleaved"));
}

TEST_CASE("a pipeline run evaluates the whole model it trained: the baseline's loss and answers") {
  // Every stage broadcast from its rank before evaluation; the ranks then
  // split the dev set as every strategy does.
  test::TempDir dir;
  const std::string eval = " --max-steps 3 --doc-stride 16 --vocab " + test::vocab_file() + " --eval-data " +
                           test::squad_file("dev-v1.1-sample.json") + " --eval-batch-size 4";
  auto base = run(dir.path, "base", "--strategy baseline --batch-size 4" + eval);
  auto pp = run(dir.path, "pp2", "--strategy pipeline --nproc-per-node 2 --batch-size 4 --micro-batches 2" + eval);
  require_same(pp, base, "pipeline 2 stages with evaluation");
  const double want = base.json["result"]["val_loss"].get<double>(), got = pp.json["result"]["val_loss"].get<double>();
  CHECK(want > 0);
  CHECK(std::abs(got - want) <= 1e-5 * want);
  CHECK(pp.json["result"]["exact_match"] == base.json["result"]["exact_match"]);
  CHECK(pp.json["result"]["f1"] == base.json["result"]["f1"]);
}

TEST_CASE("sweep writes pipeline jobs whose global batch is split over the replicas, not the devices") {
  test::TempDir dir;
  auto out = dir.path / "sweep";
  auto r = test::run_command(bin() + " sweep --strategies pipeline:stages=2 --nodes 1 --gpus-per-node 4 --cpu "
                                     "--global-batch 16 --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::string script;
  for (auto& f : fs::directory_iterator(out / "jobs"))
    if (f.path().filename().string().starts_with("pipeline")) script = test::slurp(f.path());
  INFO(script);
  CHECK(script.find("--strategy pipeline:stages=2") != std::string::npos);
  CHECK(script.find("--batch-size 8") != std::string::npos);  // 16 over dp 2 (4 ranks, 2 stages)
  // A layout the job's ranks cannot make is refused when the sweep is written.
  auto bad = test::run_command(bin() + " sweep --strategies pipeline:stages=3 --nodes 1 --gpus-per-node 4 --cpu --out " +
                               (dir.path / "bad").string());
  INFO(bad.output);
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("--stages 3") != std::string::npos);
}

TEST_CASE("a pipeline run equals torch.distributed.pipelining training the same weights on the same data") {
  // tests/reference/pipeline_run_reference.py: Schedule1F1B and ScheduleGPipe
  // over 2 Gloo ranks, five steps from this binary's initial weights, its
  // sample order, AdamW per stage and clipping by the pipeline's norm.
  auto ref = test::reference_dir() / "pipeline_run";
  test::TempDir dir;
  for (std::string schedule : {"1f1b", "gpipe"}) {
    auto meta = nlohmann::json::parse(test::slurp(ref / ("torch_" + schedule + ".json")));
    Run torch_run;
    for (int r = 0; r < meta["stages"].get<int>(); ++r)
      for (auto& [k, v] : model::read_safetensors(ref / fmt::format("torch_{}_rank{}.safetensors", schedule, r)))
        torch_run.params[k] = v;
    for (auto& l : meta["losses"]) torch_run.losses.push_back(l.get<double>());
    auto ours = run(dir.path, "ours-" + schedule,
                    "--strategy pipeline --nproc-per-node " + std::to_string(meta["stages"].get<int>()) +
                        " --schedule " + schedule + " " + meta["flags"].get<std::string>() + " --checkpoint " +
                        (ref / "initial" / "model.safetensors").string());
    // Every trained parameter, each from the stage that holds it.
    CHECK(torch_run.params.size() >= 39);  // bert-tiny's parameters
    std::map<std::string, at::Tensor> common;
    for (auto& [k, v] : torch_run.params) {
      REQUIRE(ours.params.count(k));
      common[k] = ours.params.at(k);
    }
    ours.params = common;
    require_same(ours, torch_run, "hpcbench pipeline vs torch.distributed.pipelining, " + schedule);
    auto initial = model::read_safetensors(ref / "initial" / "model.safetensors");
    std::map<std::string, at::Tensor> init_common;
    for (auto& [k, v] : torch_run.params) init_common[k] = initial.at(k);
    CHECK(compare(init_common, torch_run.params).global_rel > 1e-4);  // training moved the weights
  }
}
