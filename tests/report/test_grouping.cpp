// Issue 33, class 2: runs are grouped as repeats of one configuration only
// when every recorded setting that changes the work is the same; where one
// differs they are separate rows, and the report names the setting.
#include "test_catch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "report/compare.h"
#include "report_fixtures.h"
#include "results/run_folder.h"
#include "test_env.h"

using namespace hpcbench;
using test::make_run;

namespace {

results::LoadedRun loaded(results::RunResult r, std::map<std::string, std::string> settings = {}) {
  r.device = "cpu";
  return {r, "runs/" + r.run_id + "/run.json", std::move(settings)};
}

// Two ddp runs of one configuration, and a baseline.
std::vector<results::LoadedRun> pair(const std::function<void(results::LoadedRun&)>& change_second) {
  std::vector<results::LoadedRun> runs{loaded(make_run("base", "baseline", 1, 8, 100, 64)),
                                       loaded(make_run("ddp-a", "ddp", 2, 8, 180, 64)),
                                       loaded(make_run("ddp-b", "ddp", 2, 8, 170, 64))};
  runs[2].result.started_at = "2025-01-03T00:00:00Z";
  change_second(runs[2]);
  return runs;
}

report::Comparison compare(const std::vector<results::LoadedRun>& runs) {
  return report::compare(runs, runs[0].result);
}

size_t ddp_rows(const report::Comparison& c) {
  size_t n = 0;
  for (auto& r : c.rows) n += r.run.strategy == "ddp";
  return n;
}

std::string notes(const report::Comparison& c) { return fmt::format("{}", fmt::join(c.notes, "\n")); }

}  // namespace

TEST_CASE("runs that differ only in activation checkpointing are two rows, the setting named") {
  auto same = compare(pair([](auto&) {}));
  CHECK(ddp_rows(same) == 1);
  auto c = compare(pair([](results::LoadedRun& r) { r.result.activation_checkpointing = 1; }));
  INFO(notes(c));
  CHECK(ddp_rows(c) == 2);
  for (auto& row : c.rows) CHECK(row.repeats.size() == 1);
  CHECK(notes(c).find("ddp-a and ddp-b (ddp on 2 device(s)) are not repeats of one configuration: activation "
                      "checkpointing off vs on") != std::string::npos);
}

TEST_CASE("every result field that changes the work keeps runs apart") {
  std::vector<std::pair<std::string, std::function<void(results::RunResult&)>>> changes = {
      {"precision", [](auto& r) { r.precision = "bf16"; }},
      {"seq length", [](auto& r) { r.seq_length = 64; }},
      {"grad accum", [](auto& r) { r.grad_accum = 2; }},
      {"batch per device", [](auto& r) { r.batch_per_device = 2; }},
      {"model", [](auto& r) { r.model = "bert-mini"; }},
      {"strategy options", [](auto& r) { r.strategy_options = "overlap=off"; }},
      {"data", [](auto& r) { r.data = "synthetic:512:seed1"; }},
  };
  for (auto& named_change : changes) {
    // Not a structured binding: Clang before 16 cannot capture one (P1091).
    const std::string& name = named_change.first;
    const auto& change = named_change.second;
    INFO(name);
    auto c = compare(pair([&](results::LoadedRun& r) { change(r.result); }));
    CHECK(ddp_rows(c) == 2);
    // The table shows the batch and the options; the rest is named in a note.
    if (name != "strategy options" && name != "batch per device") CHECK(notes(c).find(name) != std::string::npos);
  }
}

TEST_CASE("recorded settings that change the work (cuda_graph, fused, threads) keep runs apart; others do not") {
  const std::map<std::string, std::string> base{{"train.cuda_graph", "off"}, {"train.fused", "off"},
                                                {"run.threads", "2"},        {"train.seed", "1"},
                                                {"run.name", "ddp-a"},       {"train.max_steps", "20"}};
  for (auto key : {"train.cuda_graph", "train.fused", "run.threads"}) {
    INFO(key);
    auto c = compare(pair([&](results::LoadedRun& r) {
      r.settings = base;
      r.settings[key] = "on";
    }));
    // The first ddp run records nothing (a summary.csv row): unknown there, not different.
    CHECK(ddp_rows(c) == 1);
  }
  for (auto key : {"train.cuda_graph", "train.fused", "run.threads"}) {
    INFO(key);
    auto runs = pair([&](results::LoadedRun& r) {
      r.settings = base;
      r.settings[key] = "on";
    });
    runs[1].settings = base;
    auto c = compare(runs);
    CHECK(ddp_rows(c) == 2);
    CHECK(notes(c).find(std::string(key) + " " + base.at(key) + " vs on") != std::string::npos);
  }
  // A different seed, name or step count is the same work: one row of two repeats.
  auto runs = pair([&](results::LoadedRun& r) {
    r.settings = base;
    r.settings["train.seed"] = "2";
    r.settings["run.name"] = "ddp-b";
    r.settings["train.max_steps"] = "40";
  });
  runs[1].settings = base;
  auto c = compare(runs);
  CHECK(ddp_rows(c) == 1);
  CHECK(notes(c).find("not repeats") == std::string::npos);
}

TEST_CASE("run.json's recorded settings reach the report through the reader") {
  test::TempDir dir;
  auto root = dir.path / "runs";
  for (std::string id : {"ddp-a", "ddp-b"}) {
    auto r = make_run(id, "ddp", 2, 8, id == "ddp-a" ? 180 : 170, 64);
    r.device = "cpu";
    results::RunFiles f(r);
    f.details["config"] = {{"train.fused", id == "ddp-a" ? "off" : "on"}, {"train.seed", "1"}};
    results::write_run_folder(root, id, f);
  }
  auto l = results::read_results({root});
  REQUIRE(l.runs.size() == 2);
  CHECK(l.runs[0].settings.at("train.fused") == "off");
  auto c = report::compare(l.runs, std::nullopt);
  CHECK(ddp_rows(c) == 2);
  CHECK(notes(c).find("train.fused off vs on") != std::string::npos);
}
