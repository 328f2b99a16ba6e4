#include "test_catch.h"

#include <fmt/format.h>

#include "core/error.h"
#include "report/compare.h"
#include "report/report_tables.h"
#include "report/reference.h"
#include "report_fixtures.h"
#include "test_env.h"

using namespace hpcbench;
using test::make_run;
using test::on_device;
using test::kA100, test::kH100, test::kXeon;

namespace {
const report::ComparisonRow& row(const report::Comparison& c, const std::string& id) {
  for (auto& r : c.rows)
    if (r.run.run_id == id) return r;
  FAIL("no row " << id);
  throw;
}
}  // namespace

TEST_CASE("speedup is the baseline's time over the run's for the same samples; efficiency per GPU") {
  auto base = make_run("b", "baseline", 1, 8, 100, 512);
  auto run = make_run("r", "ddp", 4, 8, 300, 320);
  auto c = report::compare({{base, ""}, {run, ""}}, base);
  auto& r = row(c, "r");
  REQUIRE(r.speedup);
  CHECK(*r.speedup == Approx(3.0));
  CHECK(*r.efficiency == Approx(0.75));
  CHECK(*r.memory_ratio == Approx(320.0 / 512.0));
  // Batch 2 per device against 8: not the same per-device work.
  CHECK_FALSE(r.weak_efficiency);
  CHECK(r.weak_mismatch == "batch per device 2 vs baseline 8");
  auto& b = row(c, "b");
  CHECK(b.is_baseline);
  CHECK(*b.speedup == 1.0);
  CHECK(*b.efficiency == 1.0);
  CHECK(*b.weak_efficiency == 1.0);
}

TEST_CASE("strategies at world size 1 are said to show their overhead, not scaling") {
  auto base = make_run("b", "baseline", 1, 8, 100, 512);
  auto one = make_run("ddp-1x", "ddp", 1, 8, 97, 512);
  auto two = make_run("ddp-2x", "ddp", 2, 8, 180, 384);
  auto c = report::compare({{base, ""}, {one, ""}, {two, ""}}, base);
  REQUIRE(row(c, "ddp-1x").speedup);
  CHECK(*row(c, "ddp-1x").speedup == Approx(0.97));
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], Catch::Contains("ddp-1x ran on one device") && Catch::Contains("overhead"));
  CHECK_THAT(c.notes[0], !Catch::Contains("ddp-2x"));
  CHECK_THAT(report::terminal_report(c, {}), Catch::Contains("note: ddp-1x ran on one device"));
  CHECK_THAT(report::markdown_report(c, {}, {}), Catch::Contains("Notes:"));
  // Without such a run there is nothing to say.
  CHECK(report::compare({{base, ""}, {two, ""}}, base).notes.empty());
}

TEST_CASE("without samples/s the speedup is the inverse time ratio for the same samples") {
  results::RunResult base, run;
  base.train_time_s = 5108.80;
  run.train_time_s = 997.45;
  run.world_size = 2;
  base.samples_timed = run.samples_timed = 1000;
  CHECK(*report::throughput_ratio(run, base) == Approx(5108.80 / 997.45));
  run.samples_timed = 2000;  // different work: times do not compare
  CHECK_FALSE(report::throughput_ratio(run, base));
  run.samples_per_s = 50;
  base.samples_per_s = 20;
  CHECK(*report::throughput_ratio(run, base) == Approx(2.5));
}

TEST_CASE("efficiency is relative to the baseline's world size") {
  auto base = make_run("b", "ddp", 2, 8, 100, 0);
  auto run = make_run("r", "ddp", 8, 8, 320, 0);
  auto c = report::compare({{run, ""}}, base);
  CHECK(*c.rows[0].speedup == Approx(3.2));
  CHECK(*c.rows[0].efficiency == Approx(0.8));
}

TEST_CASE("weak scaling compares throughput per device at the same per-device batch") {
  auto base = make_run("b", "baseline", 1, 8, 100, 512);
  auto run = make_run("w", "ddp", 4, 32, 360, 520);
  auto c = report::compare({{run, ""}}, base);
  auto& r = c.rows[0];
  CHECK(*r.weak_efficiency == Approx(0.9));
  CHECK(*r.memory_ratio == Approx(520.0 / 512.0));
  CHECK_FALSE(r.speedup);
  CHECK_FALSE(r.efficiency);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "w: no speedup against baseline b: global batch 32 vs baseline 8");
}

TEST_CASE("comparability: each differing setting says why") {
  auto base = make_run("b", "baseline", 1, 8, 100, 0);
  auto r = base;
  CHECK(report::strong_mismatch(r, base).empty());
  CHECK(report::weak_mismatch(r, base).empty());
  r.model = "bert-base";
  CHECK(report::strong_mismatch(r, base) == "model bert-base vs baseline bert-tiny");
  r = base;
  r.precision = "bf16";
  CHECK(report::strong_mismatch(r, base) == "precision bf16 vs baseline fp32");
  r = base;
  r.seq_length = 384;
  CHECK(report::strong_mismatch(r, base) == "seq length 384 vs baseline 128");
  r = base;
  r.data = "dev-v1.1.json:1449";
  CHECK(report::strong_mismatch(r, base) == "data dev-v1.1.json:1449 vs baseline synthetic:256:seed1");
  r = base;
  r.global_batch = 32;
  CHECK(report::strong_mismatch(r, base) == "global batch 32 vs baseline 8");
  CHECK(report::weak_mismatch(r, base).empty());
  r.batch_per_device = 4;
  CHECK(report::weak_mismatch(r, base) == "batch per device 4 vs baseline 8");
  // Several at once, and an unknown value on one side.
  r = base;
  r.model = "bert-base";
  r.seq_length = 0;
  CHECK(report::strong_mismatch(r, base) == "model bert-base vs baseline bert-tiny; seq length ? vs baseline 128");
  // The strategy and world size never prevent a comparison, nor a device
  // name known on one side only (older results lack it).
  r = base;
  r.strategy = "fsdp";
  r.world_size = 8;
  r.device_name = "other";
  CHECK(report::strong_mismatch(r, base).empty());
}

TEST_CASE("device: a CPU run is not divided by a GPU baseline, nor an H100 run by an A100 one") {
  auto base = on_device(make_run("b", "baseline", 1, 8, 100, 512), "cuda", kA100);
  auto cpu = on_device(make_run("cpu", "ddp", 2, 8, 37, 300), "cpu", kXeon);
  auto h100 = on_device(make_run("h100", "ddp", 2, 8, 400, 300), "cuda", kH100);
  auto a100 = on_device(make_run("a100", "ddp", 2, 8, 180, 384), "cuda", kA100);
  auto c = report::compare({{base, ""}, {cpu, ""}, {h100, ""}, {a100, ""}}, base);
  for (auto id : {"cpu", "h100"}) {
    INFO(id);
    auto& r = row(c, id);
    CHECK_FALSE(r.speedup);
    CHECK_FALSE(r.efficiency);
    CHECK_FALSE(r.weak_efficiency);
    CHECK_FALSE(r.memory_ratio);
    CHECK(r.baseline->run_id == "b");
  }
  CHECK(row(c, "cpu").strong_mismatch == "device cpu vs baseline cuda");
  CHECK(row(c, "cpu").weak_mismatch == "device cpu vs baseline cuda; batch per device 4 vs baseline 8");
  CHECK(row(c, "h100").strong_mismatch == fmt::format("device name {} vs baseline {}", kH100, kA100));
  CHECK(c.warnings == std::vector<std::string>{
                          "cpu: no speedup against baseline b: device cpu vs baseline cuda",
                          fmt::format("h100: no speedup against baseline b: device name {} vs baseline {}", kH100,
                                      kA100)});
  // The same GPU model still compares.
  auto& same = row(c, "a100");
  CHECK(same.strong_mismatch.empty());
  CHECK(*same.speedup == Approx(1.8));
  CHECK(*same.memory_ratio == Approx(384.0 / 512.0));
  CHECK(c.device_baselines.empty());
}

TEST_CASE("device: an unknown name is no difference, an unknown or other type is") {
  auto base = on_device(make_run("b", "baseline", 1, 8, 100, 0), "cuda", kA100);
  // Results of schema 0 have no device name: they compare with any GPU.
  CHECK(report::strong_mismatch(on_device(base, "cuda", ""), base).empty());
  CHECK(report::strong_mismatch(base, on_device(base, "cuda", "")).empty());
  CHECK(report::strong_mismatch(on_device(base, "cpu", ""), base) == "device cpu vs baseline cuda");
  CHECK(report::strong_mismatch(on_device(base, "", ""), base) == "device ? vs baseline cuda");
  // Two CPU models differ like two GPU models.
  auto xeon = on_device(base, "cpu", kXeon);
  CHECK(report::weak_mismatch(on_device(base, "cpu", "AMD EPYC 9654 96-Core Processor"), xeon) ==
        fmt::format("device name AMD EPYC 9654 96-Core Processor vs baseline {}", kXeon));
  CHECK(report::same_device(on_device(base, "cuda", ""), on_device(base, "cuda", kH100)));
  CHECK_FALSE(report::same_device(on_device(base, "cuda", kA100), on_device(base, "cuda", kH100)));
}

TEST_CASE("device: a CPU baseline and a GPU baseline in one folder each serve their own runs") {
  auto runs = test::device_runs();
  std::vector<results::RunResult> results;
  for (auto& r : runs) results.push_back(r.result);
  auto i = report::choose_baseline(results, "auto");
  REQUIRE(i);
  CHECK(results[*i].run_id == "gpu-base");

  auto c = report::compare(runs, results[*i]);
  CHECK(*row(c, "gpu-ddp").speedup == Approx(1.8));
  CHECK(row(c, "gpu-ddp").baseline->run_id == "gpu-base");
  auto& cpu = row(c, "cpu-ddp");
  CHECK(cpu.baseline->run_id == "cpu-base");
  CHECK(*cpu.speedup == Approx(1.5));
  CHECK(*cpu.efficiency == Approx(0.75));
  CHECK(*cpu.memory_ratio == Approx(600.0 / 1024.0));
  CHECK(row(c, "cpu-base").is_baseline);
  CHECK(*row(c, "cpu-base").speedup == 1.0);
  REQUIRE(c.device_baselines.size() == 1);
  CHECK(c.device_baselines[0].run_id == "cpu-base");
  // No H100 baseline: refused against the chosen one, not against the CPU's.
  CHECK(row(c, "h100-ddp").baseline->run_id == "gpu-base");
  CHECK(row(c, "h100-ddp").strong_mismatch == fmt::format("device name {} vs baseline {}", kH100, kA100));
  CHECK(c.warnings.size() == 1);

  // A baseline given by id serves its own device; the others keep theirs.
  auto by_id = report::compare(runs, results[*report::choose_baseline(results, "cpu-base")]);
  CHECK(row(by_id, "cpu-ddp").baseline->run_id == "cpu-base");
  CHECK(*row(by_id, "gpu-ddp4").speedup == Approx(3.0));
  CHECK(row(by_id, "gpu-ddp4").baseline->run_id == "gpu-base");
}

TEST_CASE("runs that did not finish get no figures") {
  auto runs = test::fixture_runs();
  auto c = report::compare(runs, runs[2].result);
  auto& f = row(c, "fsdp-2x");
  CHECK(f.run.status == "failed");
  CHECK_FALSE(f.speedup);
  CHECK_FALSE(f.weak_efficiency);
  CHECK(f.strong_mismatch.empty());
}

TEST_CASE("rows are ordered by strategy, then world size") {
  auto c = report::compare(test::fixture_runs(), std::nullopt);
  std::vector<std::string> ids;
  for (auto& r : c.rows) ids.push_back(r.run.run_id);
  CHECK(ids == std::vector<std::string>{"base-1x", "dp-2x-fp16", "ddp-2x", "ddp-2x-weak", "ddp-4x", "fsdp-2x",
                                        "zero-2x"});
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].starts_with("no baseline:"));
}

TEST_CASE("auto baseline: 1 GPU, strategy baseline, status ok, most comparable, newest") {
  std::vector<results::RunResult> runs;
  for (auto& lr : test::fixture_runs()) runs.push_back(lr.result);
  CHECK(runs[*report::choose_baseline(runs, "auto")].run_id == "base-1x");
  // A newer baseline of the same set-up wins...
  auto newer = make_run("base-1x-new", "baseline", 1, 8, 99, 512);
  newer.started_at = "2025-02-01T00:00:00Z";
  runs.push_back(newer);
  CHECK(runs[*report::choose_baseline(runs, "auto")].run_id == "base-1x-new");
  // ...but not a newer one of a set-up few runs share, nor a failed one.
  auto other = newer;
  other.run_id = "base-1x-large";
  other.model = "bert-large";
  other.started_at = "2025-03-01T00:00:00Z";
  runs.push_back(other);
  auto failed = newer;
  failed.run_id = "base-1x-failed";
  failed.status = "failed";
  failed.started_at = "2025-04-01T00:00:00Z";
  runs.push_back(failed);
  CHECK(runs[*report::choose_baseline(runs, "auto")].run_id == "base-1x-new");
  // A ddp run on 1 GPU is not the baseline strategy.
  std::vector<results::RunResult> none = {make_run("ddp-1x", "ddp", 1, 8, 100, 0)};
  CHECK_FALSE(report::choose_baseline(none, "auto"));
  // By id; an unknown id lists those read.
  CHECK(runs[*report::choose_baseline(runs, "ddp-4x")].run_id == "ddp-4x");
  CHECK_THROWS_WITH(report::choose_baseline(runs, "nope"), Catch::Contains("--baseline nope: no such run") &&
                                                                Catch::Contains("ddp-4x"));
  CHECK_THROWS_AS(report::choose_baseline(runs, "fsdp-2x"), UserError);
}

TEST_CASE("published figures: weak scaling as NVIDIA and the Accelerate report state it") {
  std::vector<std::string> warnings;
  auto sets = report::read_references(test::source_dir() / "results/reference", warnings);
  CHECK(warnings.empty());
  auto find = [&](const std::string& id) -> const report::ComparisonRow& {
    for (auto& s : sets)
      for (auto& r : s.comparison.rows)
        if (r.run.run_id == id) return r;
    FAIL("no reference row " << id);
    throw;
  };
  // NVIDIA's README: weak scaling 7.63 (TF32) and 7.66 (FP16) on 8 GPUs,
  // from unrounded throughputs; ours from the rounded ones.
  CHECK(*find("dgxa100-tf32-8").weak_efficiency * 8 == Approx(7.63).margin(0.01));
  CHECK(*find("dgxa100-fp16-8").weak_efficiency * 8 == Approx(7.66).margin(0.01));
  CHECK_FALSE(find("dgxa100-fp16-8").speedup);  // global batch 256 vs 32
  // The Accelerate report's speedups (same epochs, time ratio).
  CHECK(*find("v100-2").weak_efficiency * 2 == Approx(2.025).margin(0.005));
  CHECK(*find("v100-4").weak_efficiency * 4 == Approx(3.655).margin(0.005));
  CHECK(*find("v100-8").weak_efficiency * 8 == Approx(6.4).margin(0.005));
  CHECK(*find("v100-16").weak_efficiency * 16 == Approx(10.38).margin(0.005));
  CHECK(find("v100-8-b128").weak_mismatch == "batch per device 128 vs baseline 256");
  // The student report: times for 2 epochs; ddp against the 1-GPU loop.
  auto& ddp = find("a100x2-ddp");
  CHECK(ddp.run.train_time_s == 997.45);
  CHECK(ddp.source.find("Student report") != std::string::npos);
  CHECK(*ddp.weak_efficiency == Approx(5108.80 / 997.45 / 2));
  // 5 epochs: no 1-GPU row of that length to compare with.
  CHECK_FALSE(find("a100x2-ddp-5ep").weak_efficiency);
}
