// The sweep a plan writes: the reference and the top k at the plan's shape,
// a recomputing layout with its flag, read back by the sweep's own reader
// and resume, and plan.json read back.
#include "test_catch.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "fixture.h"
#include "plan/verify.h"
#include "results/plan_file.h"
#include "sweep/job_script.h"
#include "sweep/manifest.h"
#include "sweep/status.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

TEST_CASE("the verifying sweep: the reference, then the top k in rank order, with their predictions") {
  test::PlanSetup s;
  auto res = plan::search(s.r);
  test::TempDir dir;
  sweep::SweepOptions o;
  o.out_dir = dir.path / "sweep";
  o.hpcbench = "/opt/hpcbench";
  o.run_args = {"--max-steps", "5"};
  auto jobs = plan::verify_jobs(res, s.r, 3, o);
  REQUIRE(jobs.size() == 4);
  CHECK(jobs[0].name == "baseline-1x1");
  for (int k = 1; k <= 3; ++k) {
    CHECK(jobs[k].strategy == res.ranked[k - 1].candidate.choice.label());
    CHECK(jobs[k].nodes == 1);
    CHECK(jobs[k].gpus_per_node == 2);
  }
  auto record = plan::plan_record(res, s.r, jobs, "sys.toml");
  auto written = plan::write_verify_sweep(o, jobs, record);

  // The sweep's reader and resume take it as any sweep.
  auto back = sweep::read_manifest(o.out_dir);
  REQUIRE(back.jobs.size() == 4);
  CHECK(back.options.run_args == o.run_args);
  auto resume = sweep::prepare_resume(back, o.out_dir.string());
  CHECK(resume.resubmit.size() == 4);  // none submitted yet
  // Each job's batch is the global batch over its replicas, as `sweep --global-batch` writes it.
  auto script = test::slurp(o.out_dir / jobs[1].script);
  const auto& top = res.ranked[0].candidate;
  CHECK(script.find(fmt::format("--batch-size {} --grad-accum {}", top.micro(), top.accum)) != std::string::npos);
  CHECK(top.micro() * top.accum * top.replicas == 8);
  // The reference: 8 sequences on one device in the baseline's micro-batches of 8.
  CHECK(test::slurp(o.out_dir / jobs[0].script).find("--batch-size 8 --grad-accum 1") != std::string::npos);

  auto p = results::read_plan_file(o.out_dir / "plan.json");
  REQUIRE(p.layouts.size() == 4);
  CHECK(p.layouts[0].rank == 0);
  CHECK(p.layouts[0].step_ms == Approx(4.5 * 1000));  // the reference: 8 rows on one device
  for (int k = 1; k <= 3; ++k) {
    CHECK(p.layouts[k].job == jobs[k].name);
    CHECK(p.layouts[k].rank == k);
    CHECK(p.layouts[k].step_ms == Approx(res.ranked[k - 1].prediction.step_s * 1000));
    CHECK(p.layouts[k].step_ms_low <= p.layouts[k].step_ms_high);
  }
  CHECK(p.tie_threshold == Approx(res.tie_threshold));
  CHECK(p.searched == res.space.enumerated);
}

TEST_CASE("a recomputing layout is its own job with --activation-checkpointing") {
  test::PlanSetup s;
  // A limit that only recomputation meets for the replicated layouts keeps
  // both kinds in the ranking; take a recomputing one into the top by hand.
  auto res = plan::search(s.r);
  auto it = std::find_if(res.ranked.begin(), res.ranked.end(), [](auto& x) { return x.candidate.recompute; });
  REQUIRE(it != res.ranked.end());
  std::rotate(res.ranked.begin(), it, it + 1);
  test::TempDir dir;
  sweep::SweepOptions o;
  o.out_dir = dir.path / "sweep";
  o.hpcbench = "/opt/hpcbench";
  auto jobs = plan::verify_jobs(res, s.r, 2, o);
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[1].name.ends_with("-recompute"));
  REQUIRE_FALSE(jobs[1].extra_args.empty());
  CHECK(jobs[1].extra_args.back() == "--activation-checkpointing");
  plan::write_verify_sweep(o, jobs, plan::plan_record(res, s.r, jobs, "sys.toml"));
  auto script = test::slurp(o.out_dir / jobs[1].script);
  CHECK(script.find("--activation-checkpointing") != std::string::npos);
  CHECK(test::slurp(o.out_dir / jobs[2].script).find("--activation-checkpointing") == std::string::npos);
  CHECK(sweep::read_manifest(o.out_dir).jobs[1].extra_args == jobs[1].extra_args);

  // Recomputation is plan's to choose, and k must be at least 1.
  sweep::SweepOptions bad = o;
  bad.run_args = {"--activation-checkpointing"};
  CHECK_THROWS_WITH(plan::verify_jobs(res, s.r, 2, bad), Catch::Contains("--activation-checkpointing"));
  bad.run_args = {"--grad-accum", "2"};
  CHECK_THROWS_WITH(plan::verify_jobs(res, s.r, 2, bad), Catch::Contains("plan sets --grad-accum"));
  CHECK_THROWS_WITH(plan::verify_jobs(res, s.r, 0, o), Catch::Contains("--verify 0"));
}

TEST_CASE("each job runs its layout's precision; a layout at another precision than the baseline's is named by it") {
  test::PlanSetup s;
  s.r.peak_tflops = {{"fp32", 1}, {"bf16", 2}};
  auto res = plan::search(s.r);
  REQUIRE(res.ranked.front().candidate.precision == "bf16");
  test::TempDir dir;
  sweep::SweepOptions o;
  o.out_dir = dir.path / "sweep";
  o.hpcbench = "/opt/hpcbench";
  auto jobs = plan::verify_jobs(res, s.r, 1, o);
  REQUIRE(jobs.size() == 2);
  auto has = [](const sweep::SweepJob& j, const std::string& p) {
    for (size_t k = 0; k + 1 < j.extra_args.size(); ++k)
      if (j.extra_args[k] == "--precision" && j.extra_args[k + 1] == p) return true;
    return false;
  };
  CHECK(has(jobs[0], "fp32"));  // the reference: the baseline's
  CHECK(has(jobs[1], "bf16"));
  CHECK(jobs[1].name.ends_with("-bf16"));
  plan::write_verify_sweep(o, jobs, plan::plan_record(res, s.r, jobs, "sys.toml"));
  CHECK(test::slurp(o.out_dir / jobs[1].script).find("--precision bf16") != std::string::npos);
  // The precision is plan's to set.
  sweep::SweepOptions bad = o;
  bad.run_args = {"--precision", "fp16"};
  CHECK_THROWS_WITH(plan::verify_jobs(res, s.r, 1, bad), Catch::Contains("plan sets --precision"));
}

TEST_CASE("plan.json and sweep.json that are not what they say are refused naming the file, through one reader") {
  test::PlanSetup s;
  auto res = plan::search(s.r);
  test::TempDir dir;
  sweep::SweepOptions o;
  o.out_dir = dir.path / "sweep";
  o.hpcbench = "/opt/hpcbench";
  auto jobs = plan::verify_jobs(res, s.r, 1, o);
  plan::write_verify_sweep(o, jobs, plan::plan_record(res, s.r, jobs, "sys.toml"));
  const auto plan_json = o.out_dir / "plan.json", sweep_json = o.out_dir / "sweep.json";
  const auto plan_text = test::slurp(plan_json), sweep_text = test::slurp(sweep_json);
  auto plan_refused = [&](const std::string& text, const std::string& words) {
    write_file_atomic(plan_json, text);
    CHECK_THROWS_WITH(results::read_plan_file(plan_json),
                      Catch::StartsWith(plan_json.string() + ": ") && Catch::Contains(words));
  };
  auto sweep_refused = [&](const std::string& text, const std::string& words) {
    write_file_atomic(sweep_json, text);
    CHECK_THROWS_WITH(sweep::read_manifest(o.out_dir),
                      Catch::StartsWith(sweep_json.string() + ": ") && Catch::Contains(words));
  };
  plan_refused("{\"schema\": ", "not a plan (");
  // Each read as the other, and a schema that is not even a string.
  plan_refused(sweep_text, "not a plan (schema 'hpcbench-sweep/1', expected 'hpcbench-plan/1')");
  sweep_refused(plan_text, "not a sweep manifest (schema 'hpcbench-plan/1', expected 'hpcbench-sweep/1')");
  sweep_refused("{\"schema\": 1}", "not a sweep manifest (schema '', expected 'hpcbench-sweep/1')");
  plan_refused("[1, 2]", "not a plan (schema ''");
  // A field missing or of another type.
  auto no_nodes = nlohmann::json::parse(plan_text);
  no_nodes.erase("nodes");
  plan_refused(no_nodes.dump(), "malformed plan (");
  auto bad_jobs = nlohmann::json::parse(sweep_text);
  bad_jobs["jobs"] = "none";
  sweep_refused(bad_jobs.dump(), "malformed sweep manifest (");
  // A folder where the file should be: the reader names it too.
  fs::remove(plan_json);
  fs::create_directory(plan_json);
  CHECK_THROWS_WITH(results::read_plan_file(plan_json), Catch::Contains(plan_json.string()));
}
