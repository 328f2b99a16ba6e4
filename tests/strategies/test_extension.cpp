// A strategy is one folder and one registry line: the toy strategy of
// tests/strategies/toy/ (its options, its spec, its Strategy), registered by
// the one add_strategy line below (what a line of registry.inc does for the
// strategies lib/ ships), appears in `run --help`, trains through `run`, and
// is known to sweep, predict and report, without an edit anywhere else.
#include "test_catch.h"
#include "test_env.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "hpcbench/commands.h"
#include "predict/step_model.h"
#include "report/compare.h"
#include "report/efficiency.h"
#include "report/report_tables.h"
#include "results/run_reader.h"
#include "results/steps.h"
#include "specs/registry.h"
#include "strategies/strategy.h"
#include "sweep/plan.h"
#include "toy/toy.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

void register_toy() {
  static const bool added = (strategies::add_strategy(strategies::toy::spec(), &strategies::toy::make), true);
  (void)added;
}

// `hpcbench <args>` in this process, as main() would run it.
int hpcbench_cli(std::vector<std::string> args) {
  CLI::App app;
  std::vector<std::pair<CLI::App*, cli::Action>> commands;
  for (auto add : {cli::add_run, cli::add_sweep, cli::add_predict, cli::add_report}) {
    size_t before = app.get_subcommands({}).size();
    auto action = add(app);
    commands.emplace_back(app.get_subcommands({}).at(before), std::move(action));
  }
  std::reverse(args.begin(), args.end());
  app.parse(args);
  for (auto& [sub, action] : commands)
    if (sub->parsed()) return action();
  return -1;
}

std::vector<double> losses(const fs::path& run) {
  std::vector<double> out;
  for (auto& s : results::steps_from_json(nlohmann::json::parse(read_file(run / "run.json"))["steps"]))
    out.push_back(s.loss);
  return out;
}

}  // namespace

TEST_CASE("a strategy added as one folder and one registry line is known to run, sweep, predict and report") {
  register_toy();

  // run --help: the strategy among --strategy's, its flag with its TOML key.
  CLI::App app;
  cli::add_run(app);
  auto help = app.get_subcommand("run")->help();
  CHECK_THAT(help, Catch::Contains("toy") && Catch::Contains("--toy-chunks") && Catch::Contains("[toy.chunks]"));

  // run: it trains the reference's model (one rank: the same arithmetic).
  test::TempDir dir;
  const auto runs = dir.path / "runs";
  std::vector<std::string> common = {"run", "--model", "bert-tiny", "--synthetic-samples", "32", "--max-seq-length",
                                     "64", "--batch-size", "4", "--max-steps", "3", "--timing-warmup-steps", "1",
                                     "--dropout", "0", "--threads", "1", "--sample-ms", "0", "--tensorboard", "off",
                                     "--device", "cpu", "--results-dir", runs.string()};
  auto with = [&](std::vector<std::string> more) {
    auto a = common;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  REQUIRE(hpcbench_cli(with({"--strategy", "toy:chunks=2", "--run-name", "toy-1x"})) == 0);
  REQUIRE(hpcbench_cli(with({"--run-name", "base-1x"})) == 0);
  auto toy = losses(runs / "toy-1x"), base = losses(runs / "base-1x");
  REQUIRE(toy.size() == 3);
  for (size_t i = 0; i < toy.size(); ++i) CHECK(toy[i] == Approx(base[i]).epsilon(1e-6));
  auto record = nlohmann::json::parse(read_file(runs / "toy-1x" / "run.json"))["result"];
  CHECK(record["strategy"] == "toy");
  CHECK(record["strategy_options"] == "chunks=2");
  // A flag another strategy takes is refused by name.
  CHECK_THROWS_WITH(hpcbench_cli(with({"--strategy", "toy", "--zero-stage", "3"})),
                    Catch::Contains("--zero-stage 3 applies to --strategy zero, not toy"));
  // The fast engine is opt-in (Spec::engine): the toy declares nothing, so
  // each setting is refused before anything starts, naming it and why.
  for (const std::string flag : {"--cuda-graph", "--fused"}) {
    INFO(flag);
    CHECK_THROWS_WITH(hpcbench_cli(with({"--strategy", "toy", flag, "--run-name", "toy-engine"})),
                      Catch::Contains(flag + " with --strategy toy: toy declares no engine settings"));
    CHECK_FALSE(fs::exists(runs / "toy-engine"));
  }

  // sweep: a job per layout, named by the label.
  sweep::SweepOptions so;
  so.strategies = sweep::parse_strategy_list("toy:chunks=4", "--strategies");
  so.nodes = {1};
  so.gpus_per_node = {2};
  auto jobs = sweep::plan_jobs(so);
  REQUIRE(jobs.size() == 2);  // the reference, then the toy
  CHECK(jobs[1].strategy == "toy:chunks=4");
  CHECK(jobs[1].name == "toy-chunks4-1x2");

  // predict: its own schedule, two all-reduces after backward, all exposed.
  predict::Baseline b;
  b.forward_s = 1, b.backward_s = 2, b.optimizer_s = 0.5, b.batch = 4, b.step_s = 3.5;
  strategies::ModelLayout l;
  l.parameters = 1000;
  l.unit_numel = {1000};
  l.unit_share = {1};
  l.param_numel = {1000};
  l.param_unit = {0};
  struct PerByte final : predict::CommModel {
    double seconds(const std::string&, double bytes, const predict::Group& g) const override {
      return g.ranks() > 1 ? bytes * 1e-6 : 0;
    }
    std::string describe() const override { return "per byte"; }
  } net;
  auto p = predict::predict_step(b, l, strategies::parse_label("toy:chunks=2", "t"), {1, 2}, net, {});
  CHECK(p.exposed_s == Approx(4000 * 1e-6));
  CHECK(p.exposed_by_op.at("all_reduce") == Approx(4000 * 1e-6));

  // report: reads the run back, labels it, ranks it after the registry's own,
  // and gives its spec's advice.
  auto loaded = results::read_results({runs});
  REQUIRE(loaded.runs.size() == 2);
  std::vector<results::RunResult> rows;
  for (auto& r : loaded.runs) rows.push_back(r.result);
  auto c = report::compare(loaded.runs, rows[0].strategy == "baseline" ? rows[0] : rows[1]);
  CHECK_THAT(report::terminal_report(c, {}), Catch::Contains("toy-1x") && Catch::Contains("toy"));
  CHECK(strategies::parse_record("toy", "chunks=2").label() == "toy:chunks=2");
  CHECK(strategies::spec_order("toy") == static_cast<int>(strategies::specs().size()) - 1);
}
