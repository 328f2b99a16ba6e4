// Issue 33, class 1: `run`, `run --dry-run`, `sweep` (which dry-runs every
// job) and `predict` make one check of a run's settings, so none of them
// passes what another refuses. Through the binary, on tiny synthetic runs
// that a check stops before the first step.
#include "test_catch.h"

#include <filesystem>

#include <fmt/format.h>

#include "results/run_folder.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

const char* kTrainerStarted = "intra-op threads";

// The refusal's first line that names the flag (the error line).
bool refused(const test::CommandResult& r, const std::string& words) {
  return r.exit_code == 2 && r.output.find(words) != std::string::npos;
}

}  // namespace

TEST_CASE("run --dry-run refuses the batch and micro-batches that the run refuses, with the run's words") {
  test::TempDir dir;
  struct Case {
    std::string flags, expect;
  } cases[] = {
      {"--synthetic-samples 8 --batch-size 16", "--batch-size 16 is larger than the data"},
      {"--synthetic-samples 64 --batch-size 4 --strategy pipeline:micro-batches=8",
       "--micro-batches 8 with --batch-size 4"},
      {"--synthetic-samples 16 --batch-size 4 --grad-accum 8", "--grad-accum 8 with --batch-size 4"},
      {"--synthetic-samples 64 --batch-size 4 --strategy pipeline --stage-layers 4,4,",
       "--stage-layers 4,4,: an empty count"},
  };
  for (auto& c : cases) {
    INFO(c.flags);
    const std::string common = fmt::format("'{}' run --max-steps 2 --threads 1 --results-dir '{}' {}", bin(),
                                           (dir.path / "results").string(), c.flags);
    auto dry = test::run_command(common + " --dry-run");
    INFO(dry.output);
    CHECK(refused(dry, c.expect));
    CHECK(dry.output.find("nothing was run") == std::string::npos);
    auto real = test::run_command(common);
    INFO(real.output);
    CHECK(refused(real, c.expect));
    CHECK(real.output.find(kTrainerStarted) == std::string::npos);
    CHECK(test::entries(dir.path / "results") == 0);
  }
}

TEST_CASE("run --dry-run --nodes N --gpus-per-node G checks the job's ranks, not one process") {
  test::TempDir dir;
  // 64 samples: one process holds all of them; 8 ranks hold 8 each.
  const std::string common = fmt::format("'{}' run --dry-run --strategy ddp --device cpu --synthetic-samples 64 "
                                         "--batch-size 16 --results-dir '{}'",
                                         bin(), (dir.path / "results").string());
  auto one = test::run_command(common);
  INFO(one.output);
  CHECK(one.exit_code == 0);
  auto eight = test::run_command(common + " --nodes 2 --gpus-per-node 4");
  INFO(eight.output);
  CHECK(refused(eight, "each of the 8 ranks gets 8 of the 64 training samples"));
}

TEST_CASE("--nproc-per-node, --nodes, --gpus-per-node below 1 are refused, not run as one process") {
  test::TempDir dir;
  for (std::string flag : {"--nproc-per-node -2", "--nproc-per-node 0", "--nodes -1", "--gpus-per-node 0"}) {
    INFO(flag);
    auto r = test::run_command(fmt::format("'{}' run --max-steps 1 --synthetic-samples 16 --threads 1 "
                                           "--results-dir '{}' {}",
                                           bin(), (dir.path / "results").string(), flag));
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(flag.substr(0, flag.find(' '))) != std::string::npos);
    CHECK(r.output.find("at least 1") != std::string::npos);
    CHECK(r.output.find(kTrainerStarted) == std::string::npos);
    CHECK(test::entries(dir.path / "results") == 0);
  }
}

TEST_CASE("a flag that contradicts the option written in the label is refused naming both") {
  test::TempDir dir;
  for (std::string dry : {" --dry-run", ""}) {
    auto r = test::run_command(fmt::format("'{}' run --max-steps 1 --synthetic-samples 16 --threads 1 --results-dir "
                                           "'{}' --strategy pipeline:schedule=1f1b --schedule gpipe{}",
                                           bin(), (dir.path / "results").string(), dry));
    INFO(r.output);
    CHECK(refused(r, "pipeline:schedule=1f1b"));
    CHECK(r.output.find("--schedule gpipe") != std::string::npos);
    CHECK(r.output.find(kTrainerStarted) == std::string::npos);
  }
  // The same value twice is one value: it runs (dry).
  auto ok = test::run_command(fmt::format("'{}' run --dry-run --synthetic-samples 16 --results-dir '{}' "
                                          "--strategy pipeline:schedule=gpipe --schedule gpipe",
                                          bin(), (dir.path / "results").string()));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("sweep refuses, before writing anything, jobs whose batch does not fit their ranks' data") {
  test::TempDir dir;
  auto out = dir.path / "sweep";
  // 4 ranks of 64 samples hold 16 each: a batch of 32 fits one process only,
  // which is all the sweep's dry run used to check.
  auto r = test::run_command(fmt::format("'{}' sweep --strategies ddp --nodes 1 --gpus-per-node 4 --cpu --out '{}' "
                                         "-- --synthetic-samples 64 --batch-size 32 --max-steps 2",
                                         bin(), out.string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("each of the 4 ranks gets 16") != std::string::npos);
  CHECK(r.output.find("nothing was written or submitted") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  // With a batch that fits, the same sweep is written.
  auto ok = test::run_command(fmt::format("'{}' sweep --strategies ddp --nodes 1 --gpus-per-node 4 --cpu --out '{}' "
                                          "-- --synthetic-samples 64 --batch-size 16 --max-steps 2",
                                          bin(), out.string()));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(fs::exists(out / "sweep.json"));
}

namespace {

results::RunResult baseline_run() {
  results::RunResult r;
  r.run_id = "base-1x";
  r.strategy = "baseline";
  r.device = "cuda";
  r.device_name = "NVIDIA A100-PCIE-40GB";
  r.precision = "fp32";
  r.model = "bert-tiny";
  r.seq_length = 128;
  r.batch_per_device = 4;
  r.global_batch = 4;
  r.data = "synthetic:512:seed0";
  r.step_ms_median = 100;
  r.forward_ms = 30;
  r.backward_ms = 60;
  r.optimizer_ms = 10;
  r.samples_per_s = 40;
  r.timed_steps = 10;
  return r;
}

}  // namespace

TEST_CASE("predict leaves out, with run's reason, each layout run refuses; never an empty table without one") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  results::write_run_folder(runs, "base-1x", baseline_run());
  auto sys = test::source_dir() / "configs/systems/a100-pcie-2x.toml";
  auto predict = [&](const std::string& args) {
    return test::run_command(fmt::format("'{}' predict --baseline '{}' --system '{}' {}", bin(),
                                         (runs / "base-1x").string(), sys.string(), args));
  };
  auto tp3 = predict("--strategies tensor:tp-size=3 --gpus-per-node 2");
  INFO(tp3.output);
  CHECK(tp3.exit_code == 0);
  CHECK(tp3.output.find("# tensor:tp-size=3 at 1 x 2: not predicted: ") != std::string::npos);
  CHECK(tp3.output.find("--tp-size 3") != std::string::npos);
  CHECK(tp3.output.find("no layout predicted") != std::string::npos);
  // The baseline's batch of 4 rows cannot be cut into 8 micro-batches: run
  // refuses it, so no speedup is printed for it; 2 micro-batches are predicted.
  auto micro = predict("--strategies pipeline:micro-batches=8,pipeline:micro-batches=2 --gpus-per-node 2");
  INFO(micro.output);
  CHECK(micro.exit_code == 0);
  CHECK(micro.output.find("# pipeline:micro-batches=8 at 1 x 2: not predicted: --strategy pipeline:micro-batches=8: "
                          "--micro-batches 8 with --batch-size 4") != std::string::npos);
  CHECK(micro.output.find("\npipeline:micro-batches=2") != std::string::npos);
  CHECK(micro.output.find("no layout predicted") == std::string::npos);
}
