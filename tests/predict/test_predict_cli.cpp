// `hpcbench predict` and `hpcbench report --system` end to end, on run
// folders written by the report library (bert-tiny, so the layout is quick).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "test_catch.h"
#include "test_env.h"

#include "results/csv.h"
#include "results/run_folder.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

results::RunResult run(const std::string& id, const std::string& strategy, int world, double step_ms) {
  results::RunResult r;
  r.run_id = id;
  r.strategy = strategy;
  r.strategy_options = strategy == "ddp" ? "bucket_mb=25,overlap=on,buckets=2" : "";
  r.world_size = world;
  r.gpus_per_node = world;
  // The device the shipped a100-pcie-2x system file describes.
  r.device = "cuda";
  r.device_name = "NVIDIA A100-PCIE-40GB";
  r.precision = "fp32";
  r.model = "bert-tiny";
  r.seq_length = 128;
  r.batch_per_device = 8;
  r.global_batch = 8 * world;
  r.data = "synthetic:512:seed0";
  r.step_ms_median = step_ms;
  r.forward_ms = 30;
  r.backward_ms = 60;
  r.optimizer_ms = 10;
  r.samples_per_s = 8.0 * world / (step_ms / 1000);
  r.timed_steps = 10;
  return r;
}

}  // namespace

TEST_CASE("predict: a run folder and a system file give bounded predictions for each strategy") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  results::write_run_folder(runs, "base-1x", run("base-1x", "baseline", 1, 100));
  auto out = dir.path / "pred.csv";
  auto sys = test::source_dir() / "configs/systems/a100-pcie-2x.toml";
  auto c = test::run_command(fmt::format("'{}' predict --baseline '{}' --system '{}' --strategies ddp,zero,zero:stage=3,fsdp "
                                         "--gpus-per-node 2 --csv '{}'",
                                         test::hpcbench_bin().string(), (runs / "base-1x").string(), sys.string(),
                                         out.string()));
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  CHECK(c.output.find("exposed ms by collective") != std::string::npos);
  auto rows = results::parse_csv(test::slurp(out));
  REQUIRE(rows.size() == 5);  // header + 4 strategies
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin());
  };
  for (size_t i = 1; i < rows.size(); ++i) {
    double speedup = std::stod(rows[i][col("speedup")]), step = std::stod(rows[i][col("step_ms")]);
    CHECK(speedup > 1.0);
    if (rows[i][0] == "ddp") {
      // Compute as measured, the optimizer replicated: never better than perfect.
      CHECK(speedup <= 2.0 + 1e-9);
      CHECK(step >= 100 - 1e-6);
    } else {
      // zero/fsdp step half the optimizer's elements: at least forward +
      // backward + half the optimizer.
      CHECK(step >= 95 - 1e-6);
    }
  }
}

TEST_CASE("predict: flags are checked and named") {
  test::TempDir dir;
  results::write_run_folder(dir.path / "runs", "base-1x", run("base-1x", "baseline", 1, 100));
  auto base = (dir.path / "runs/base-1x").string();
  auto bin = test::hpcbench_bin().string();
  auto both = test::run_command(fmt::format("'{}' predict --baseline '{}' --system a.toml --comm b.txt", bin, base));
  CHECK(both.exit_code != 0);
  CHECK(both.output.find("--system") != std::string::npos);
  auto bad = test::run_command(fmt::format("'{}' predict --baseline '{}' --system '{}' --strategies zero-9", bin, base,
                                           (test::source_dir() / "configs/systems/dgx-a100.toml").string()));
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("zero-9") != std::string::npos);
  auto two = test::run_command(fmt::format("'{}' predict --baseline '{}' --system x.toml", bin,
                                           (dir.path / "nowhere").string()));
  CHECK(two.exit_code != 0);
  CHECK(two.output.find("nowhere") != std::string::npos);
}

TEST_CASE("report --system: each run beside its prediction, with the error") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  results::write_run_folder(runs, "base-1x", run("base-1x", "baseline", 1, 100));
  results::write_run_folder(runs, "ddp-2x", run("ddp-2x", "ddp", 2, 120));
  auto c = test::run_command(fmt::format("'{}' report '{}' --system '{}'", test::hpcbench_bin().string(),
                                         runs.string(),
                                         (test::source_dir() / "configs/systems/a100-pcie-2x.toml").string()));
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  auto at = c.output.find("predicted beside measured");
  REQUIRE(at != std::string::npos);
  auto table = c.output.substr(at);
  auto line_at = table.find("ddp-2x");
  REQUIRE(line_at != std::string::npos);
  std::istringstream line(table.substr(line_at, table.find('\n', line_at) - line_at));
  std::string id, strategy, error;
  int devices = 0;
  double meas = 0, pred = 0;
  line >> id >> strategy >> devices >> meas >> pred >> error;
  CHECK(strategy == "ddp");
  CHECK(devices == 2);
  CHECK(meas == 120);
  // The error column is the prediction against the measurement.
  CHECK(std::stod(error) == Catch::Detail::Approx(100 * (pred / meas - 1)).margin(0.06));
}

namespace {

test::CommandResult predict(const std::string& args) {
  return test::run_command(fmt::format("'{}' predict {}", test::hpcbench_bin().string(), args));
}

// configs/systems/dgx-a100.toml with `from` replaced by `to`.
std::string system_with(const fs::path& dir, const std::string& from, const std::string& to) {
  auto text = test::slurp(test::source_dir() / "configs/systems/dgx-a100.toml");
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  static int n = 0;
  auto path = dir / fmt::format("system-{}.toml", ++n);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("predict refuses what it cannot predict, naming the reason") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  auto dgx = (test::source_dir() / "configs/systems/dgx-a100.toml").string();
  auto a100 = run("a100-1x", "baseline", 1, 100);
  a100.device_name = "NVIDIA A100-SXM4-80GB";
  results::write_run_folder(runs, "a100-1x", a100);
  auto base = fmt::format("--baseline '{}'", (runs / "a100-1x").string());
  auto ok = predict(base + " --system " + dgx + " --strategies ddp");
  INFO(ok.output);
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.output.find("WARNING") == std::string::npos);

  // A CPU baseline scaled with the DGX A100 file: refused, or predicted
  // under a warning that heads the table when asked for.
  auto cpu = run("cpu-1x", "baseline", 1, 100);
  cpu.device = "cpu";
  cpu.device_name = "";
  results::write_run_folder(runs, "cpu-1x", cpu);
  auto cpu_base = fmt::format("--baseline '{}'", (runs / "cpu-1x").string());
  auto r = predict(cpu_base + " --system " + dgx + " --strategies fsdp --gpus-per-node 8");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("ran on cpu") != std::string::npos);
  CHECK(r.output.find("describes cuda (NVIDIA A100-SXM4-80GB)") != std::string::npos);
  CHECK(r.output.find("--allow-device-mismatch") != std::string::npos);
  r = predict(cpu_base + " --system " + dgx + " --strategies fsdp --gpus-per-node 8 --allow-device-mismatch");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("# WARNING: DEVICE MISMATCH") < r.output.find("strategy "));
  // Another GPU model: predicted, with the difference said.
  auto h100 = system_with(dir.path, "\"NVIDIA A100-SXM4-80GB\"", "\"NVIDIA H100 80GB HBM3\"");
  r = predict(base + " --system " + h100 + " --strategies ddp");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("# WARNING: the baseline ran on NVIDIA A100-SXM4-80GB") != std::string::npos);

  // System files: NaN, infinite or negative figures, a fractional GPU count.
  struct Bad { std::string from, to, says; };
  for (const auto& b : std::vector<Bad>{{"latency_us = 2", "latency_us = nan", "latency_us = nan must be a finite"},
                                        {"latency_us = 6", "latency_us = -6", "latency_us -6 must not be negative"},
                                        {"bandwidth_GBps = 300", "bandwidth_GBps = inf", "bandwidth_GBps = inf must be"},
                                        {"bandwidth_GBps = 200", "bandwidth_GBps = -200", "bandwidth_GBps -200 must be"},
                                        // Positive but no network's: GPU-years for a step of seconds.
                                        {"bandwidth_GBps = 200", "bandwidth_GBps = 1e-12",
                                         "[inter] bandwidth_GBps 1e-12 is below 0.01 GB/s"},
                                        {"bandwidth_GBps = 300", "bandwidth_GBps = 0.000001",
                                         "[intra] bandwidth_GBps 1e-06 is below 0.01 GB/s"},
                                        {"efficiency = 0.72", "efficiency = 1e-9", "x efficiency 1e-09 is below 0.01"},
                                        {"efficiency = 0.72", "efficiency = nan", "efficiency = nan must be"},
                                        {"gpus_per_node = 8", "gpus_per_node = 8.7", "gpus_per_node = 8.7 must be a whole"},
                                        {"gpus_per_node = 8", "gpus_per_node = 1e12", "must be a whole number from 1"},
                                        {"gpus_per_node = 8", "gpus_per_node = 8\ndevice = \"tpu\"", "device = \"tpu\""}}) {
    auto sys = system_with(dir.path, b.from, b.to);
    r = predict(base + " --system " + sys + " --strategies ddp");
    INFO(b.to << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(b.says) != std::string::npos);
  }

  // Counts: zero, negative, and a product that overflows an int.
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--nodes 1000000000", "--nodes 1000000000 x --gpus-per-node 8: 8000000000 ranks"},
           {"--nodes 0", "--nodes 0: must be at least 1"},
           {"--gpus-per-node -2", "--gpus-per-node -2: must be at least 1"},
           {"--strategies ddp:bucket_mb=nan", "--bucket-mb nan"},
           {"--global-batch -8", "--global-batch -8"}}) {
    r = predict(base + " --system " + dgx + (flags.starts_with("--strategies") ? " " : " --strategies ddp ") + flags);
    INFO(flags << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(says) != std::string::npos);
  }

  // Baselines that measured nothing usable: a failed run, NaN or negative times.
  auto failed = run("failed-1x", "baseline", 1, 100);
  failed.status = "failed";
  results::write_run_folder(runs, "failed-1x", failed);
  r = predict(fmt::format("--baseline '{}' --system {}", (runs / "failed-1x").string(), dgx));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("has status 'failed', not ok") != std::string::npos);
  auto nan_run = run("nan-1x", "baseline", 1, std::nan(""));
  results::write_run_folder(runs, "nan-1x", nan_run);
  r = predict(fmt::format("--baseline '{}' --system {}", (runs / "nan-1x").string(), dgx));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("step_ms_median of nan-1x is nan") != std::string::npos);
  auto neg = run("neg-1x", "baseline", 1, 100);
  neg.optimizer_ms = -10;
  results::write_run_folder(runs, "neg-1x", neg);
  r = predict(fmt::format("--baseline '{}' --system {}", (runs / "neg-1x").string(), dgx));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("optimizer_ms of neg-1x is -10") != std::string::npos);

  // A bench-comm file with a negative time is not a measurement.
  auto comm = dir.path / "comm.txt";
  std::ofstream(comm) << "# backend gloo, 2 rank(s) on 1 node(s)\n"
                      << "all_reduce 1048576 262144 float sum -1 -5.0 1.0 1.0 0\n";
  r = predict(fmt::format("{} --comm '{}' --strategies ddp", base, comm.string()));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("is not a measurement") != std::string::npos);
}

namespace {

// The predicted step of each run in report's "predicted beside measured"
// table: run id -> ms.
std::map<std::string, double> report_predictions(const std::string& output) {
  auto at = output.find("predicted beside measured");
  REQUIRE(at != std::string::npos);
  std::istringstream table(output.substr(at));
  std::map<std::string, double> out;
  std::string line;
  std::getline(table, line);
  std::getline(table, line);  // the header
  while (std::getline(table, line) && !line.empty()) {
    std::istringstream in(line);
    std::string id, strategy, pred;
    int devices = 0;
    double meas = 0;
    if (in >> id >> strategy >> devices >> meas >> pred) out[id] = std::stod(pred);
  }
  return out;
}

// predict's step per label: label -> ms.
std::map<std::string, double> predict_csv(const fs::path& csv) {
  auto rows = results::parse_csv(test::slurp(csv));
  REQUIRE(rows.size() > 1);
  auto col = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), "step_ms") - rows[0].begin());
  std::map<std::string, double> out;
  for (size_t i = 1; i < rows.size(); ++i) out[rows[i][0]] = std::stod(rows[i][col]);
  return out;
}

}  // namespace

TEST_CASE("report --system/--comm predict zero and fsdp runs made with --no-overlap / --no-prefetch with those "
          "schedules") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  // bert-mini: enough bytes for the schedules' exposed times to differ by
  // more than the tables' rounding.
  auto base = run("base-1x", "baseline", 1, 100);
  base.model = "bert-mini";
  results::write_run_folder(runs, "base-1x", base);
  // Each run as hpcbench writes it now, and zero's as versions before the
  // one label grammar wrote it ("no-overlap"): the same configuration.
  struct Case {
    std::string id, strategy, options, label;
  } cases[] = {
      {"z3-2x", "zero", "stage=3", "zero:stage=3"},
      {"z3-serial-2x", "zero", "stage=3,prefetch=off,overlap=off", "zero:stage=3,prefetch=off,overlap=off"},
      {"z3-old-2x", "zero", "stage=3,no-prefetch,no-overlap", "zero:stage=3,prefetch=off,overlap=off"},
      {"z2-noov-2x", "zero", "stage=2,overlap=off", "zero:overlap=off"},
      {"fsdp-2x", "fsdp", "sharding=full", "fsdp"},
      {"fsdp-nopf-2x", "fsdp", "sharding=full,prefetch=off", "fsdp:prefetch=off"},
      {"fsdp-noov-2x", "fsdp", "sharding=full,no-overlap", "fsdp:overlap=off"},
  };
  std::string labels;
  for (auto& c : cases) {
    auto r = run(c.id, c.strategy, 2, 120);
    r.model = "bert-mini";
    r.strategy_options = c.options;
    results::write_run_folder(runs, c.id, r);
    labels += (labels.empty() ? "" : ",") + c.label;
  }
  auto comm = dir.path / "comm.txt";
  {
    std::ofstream f(comm);
    f << "# backend nccl, 2 rank(s) on 1 node(s)\n";
    for (std::string op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast"})
      for (double mb : {0.0625, 1.0, 16.0, 256.0}) {
        auto bytes = static_cast<int64_t>(mb * 1048576);
        double us = 20 + mb * 1048576 / 5e3;  // 20 us and 5 GB/s
        f << fmt::format("{} {} {} float sum -1 {} 1.0 1.0 0\n", op, bytes, bytes / 4, us);
      }
  }
  auto sys = test::source_dir() / "configs/systems/a100-pcie-2x.toml";
  for (std::string network : {"--system '" + sys.string() + "'", "--comm '" + comm.string() + "'"}) {
    INFO(network);
    auto csv = dir.path / "pred.csv";
    auto p = test::run_command(fmt::format("'{}' predict --baseline '{}' {} --strategies {} --gpus-per-node 2 --csv '{}'",
                                           test::hpcbench_bin().string(), (runs / "base-1x").string(), network, labels,
                                           csv.string()));
    INFO(p.output);
    REQUIRE(p.exit_code == 0);
    auto want = predict_csv(csv);
    auto c = test::run_command(fmt::format("'{}' report '{}' {}", test::hpcbench_bin().string(), runs.string(), network));
    INFO(c.output);
    REQUIRE(c.exit_code == 0);
    auto got = report_predictions(c.output);
    for (auto& k : cases) {
      INFO(k.id << " (" << k.options << ") as " << k.label);
      REQUIRE(got.count(k.id));
      REQUIRE(want.count(k.label));
      CHECK(got[k.id] == Approx(want[k.label]).margin(0.006));
    }
    // The schedules differ, so a run predicted with another one's would fail
    // the checks above: serial reductions and no prefetch expose more.
    CHECK(want["zero:stage=3,prefetch=off,overlap=off"] > want["zero:stage=3"] + 0.05);
    CHECK(want["fsdp:prefetch=off"] > want["fsdp"] + 0.05);
    CHECK(want["fsdp:overlap=off"] > want["fsdp"] + 0.05);
  }
}

// Issue 44: predict's memory model follows the baseline's recorded engine.
// A --fused bf16 run holds 16 bytes a parameter on a replica (bf16 weights 2
// and gradients 2, fp32 masters 4, Adam's moments 8; the fused master step
// keeps no fp32 gradients: strategies/master_weights.h), as autocast's 16
// (fp32 weights, gradients and moments) but made of other parts. bert-tiny's
// BertForQuestionAnswering has 4,369,666 parameters (embeddings 3,972,864 +
// 2 layers x 198,272 + the QA head 258, as transformers counts it).
TEST_CASE("predict from a --fused bf16 baseline counts its resident weights and masters, and says so") {
  constexpr double kParams = 4369666;
  test::TempDir dir;
  auto runs = dir.path / "runs";
  auto fused = run("fused-1x", "baseline", 1, 100);
  fused.precision = "bf16";
  fused.fused = 1;
  fused.engine = "fused";
  fused.model_state_bytes = static_cast<int64_t>(16 * kParams);
  results::write_run_folder(runs, "fused-1x", fused);
  auto plain = run("plain-1x", "baseline", 1, 100);
  plain.precision = "bf16";
  results::write_run_folder(runs, "plain-1x", plain);
  auto sys = test::source_dir() / "configs/systems/a100-pcie-2x.toml";
  auto bytes = [&](const std::string& id, const std::string& label, const std::string& column) {
    auto csv = dir.path / (id + ".csv");
    auto p = predict(fmt::format("--baseline '{}' --system '{}' --strategies {} --gpus-per-node 2 --csv '{}'",
                                 (runs / id).string(), sys.string(), label, csv.string()));
    INFO(p.output);
    REQUIRE(p.exit_code == 0);
    auto rows = results::parse_csv(test::slurp(csv));
    REQUIRE(rows.size() == 2);
    auto at = std::find(rows[0].begin(), rows[0].end(), column) - rows[0].begin();
    REQUIRE(static_cast<size_t>(at) < rows[1].size());
    return rows[1][at];
  };
  CHECK(std::stod(bytes("fused-1x", "ddp", "memory_bytes")) == Approx(16 * kParams).epsilon(1e-12));
  CHECK(bytes("fused-1x", "ddp", "weights") == "resident");
  CHECK(std::stod(bytes("plain-1x", "ddp", "memory_bytes")) == Approx(16 * kParams).epsilon(1e-12));
  CHECK(bytes("plain-1x", "ddp", "weights") == "fp32");
  // The sharded engine keeps a compute copy and fp32 masters either way:
  // zero 3's persistent part is 16 bytes a parameter over the 2 ranks.
  CHECK(std::stod(bytes("fused-1x", "zero:stage=3", "memory_persistent_bytes")) ==
        Approx(16 * kParams / 2).epsilon(1e-12));

  // The output says which model it used, beside what the baseline measured;
  // a strategy that cannot run the fused model is not credited with its
  // kernels: refused with its own reason.
  auto p = predict(fmt::format("--baseline '{}' --system '{}' --strategies ddp,dp --gpus-per-node 2",
                               (runs / "fused-1x").string(), sys.string()));
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.output, Catch::Contains("# memory model: the baseline's engine is fused under bf16") &&
                           Catch::Contains("16 bytes a parameter on a replica") &&
                           Catch::Contains(fmt::format("the baseline measured {:.1f} MiB of model state, the model "
                                                       "says {:.1f} MiB", 16 * kParams / (1 << 20),
                                                       16 * kParams / (1 << 20))));
  CHECK_THAT(p.output, Catch::Contains("# dp at 1 x 2: not predicted: the baseline") &&
                           Catch::Contains("which --strategy dp cannot run: one process drives its replicas"));
  auto q = predict(fmt::format("--baseline '{}' --system '{}' --strategies ddp --gpus-per-node 2",
                               (runs / "plain-1x").string(), sys.string()));
  CHECK_THAT(q.output, Catch::Contains("# memory model: the baseline's engine is eager under bf16") &&
                           Catch::Contains("16 bytes a parameter on a replica"));
}

// Issue 44's fault probe: an edited run.json of a fused baseline was priced
// as something it is not (precision "fp7" as fp32, fused = -1 or 2 as the
// fused engine, an engine that contradicts fused); each is refused, naming
// the field and its value.
TEST_CASE("predict refuses a baseline whose precision, fused or engine no run writes") {
  test::TempDir dir;
  auto runs = dir.path / "runs";
  auto sys = (test::source_dir() / "configs/systems/a100-pcie-2x.toml").string();
  struct Case {
    std::string id;
    std::function<void(results::RunResult&)> edit;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"fp7", [](auto& r) { r.precision = "fp7"; }, "has precision 'fp7', not fp32, tf32, fp16 or bf16"},
      {"fused-neg", [](auto& r) { r.fused = -1; }, "has fused = -1, not 0 or 1"},
      {"fused-2", [](auto& r) { r.fused = 2, r.engine = "fused"; }, "has fused = 2, not 0 or 1"},
      {"engine-odd", [](auto& r) { r.engine = "warp"; }, "has engine 'warp', not eager, graph, fused"},
      {"disagree", [](auto& r) { r.engine = "fused"; }, "has engine 'fused' but fused = 0: the two disagree"},
  };
  for (const auto& c : cases) {
    auto r = run(c.id, "baseline", 1, 100);
    r.precision = "bf16";
    r.fused = 1, r.engine = "fused";
    if (c.id == "disagree") r.fused = 0;
    c.edit(r);
    results::write_run_folder(runs, c.id, r);
    auto p = predict(fmt::format("--baseline '{}' --system '{}' --strategies ddp --gpus-per-node 2",
                                 (runs / c.id).string(), sys));
    INFO(c.id << "\n" << p.output);
    CHECK(p.exit_code == 2);
    // The terminal's lines are wrapped: compared with the wrap undone.
    std::string flat;
    for (size_t i = 0; i < p.output.size(); ++i) {
      if (p.output[i] != '\n') flat += p.output[i];
      else if (flat.empty() || flat.back() != ' ') flat += ' ';
      while (p.output[i] == '\n' && i + 1 < p.output.size() && p.output[i + 1] == ' ') ++i;
    }
    CHECK_THAT(flat, Catch::Contains(c.says));
    CHECK_THAT(p.output, !Catch::Contains("# memory model"));
  }
}
