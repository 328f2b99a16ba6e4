// The job scripts and manifest of `hpcbench sweep`, read back the way sbatch
// and the report read them; submission against a stand-in sbatch.
#include "test_catch.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "results/run_folder.h"
#include "slurm/slurm_test_util.h"
#include "sweep/job_script.h"
#include "sweep/manifest.h"
#include "sweep/plan.h"
#include "sweep/slurm_time.h"
#include "sweep/status.h"
#include "sweep/submit.h"
#include "test_env.h"

namespace fs = std::filesystem;
using namespace hpcbench;
using test::sbatch_options;

namespace {

sweep::SweepOptions options(const fs::path& out) {
  sweep::SweepOptions o;
  o.strategies = {"baseline", "ddp", "fsdp", "zero"};
  o.nodes = {1, 2};
  o.gpus_per_node = {1, 2};
  o.out_dir = out;
  o.hpcbench = "/opt/hpcbench/bin/hpcbench";
  return o;
}

std::string srun_line(const std::string& script) {
  for (const auto& l : test::lines_of(script))
    if (l.rfind("srun ", 0) == 0) return l;
  return "";
}

const std::set<std::string> kSiteOptions = {"--partition", "--account", "--time", "--constraint",
                                            "--qos", "-p", "-A", "-t", "-C", "--reservation",
                                            "--mail-user", "--exclude", "--nodelist"};

}  // namespace

TEST_CASE("list flags parse and reject bad entries", "[sweep]") {
  CHECK(sweep::parse_int_list("1,2,4", "--nodes") == std::vector<int>{1, 2, 4});
  CHECK(sweep::parse_name_list("ddp,ddp,fsdp", "--strategies") == std::vector<std::string>{"ddp", "fsdp"});
  CHECK_THROWS_WITH(sweep::parse_int_list("1,x", "--nodes"), Catch::Contains("--nodes") && Catch::Contains("'x'"));
  CHECK_THROWS_AS(sweep::parse_int_list("0", "--nodes"), UserError);
  CHECK_THROWS_AS(sweep::parse_int_list("1,,2", "--nodes"), UserError);
  auto o = options("/tmp/x");
  o.strategies = {"ddp", "pipedream"};
  CHECK_THROWS_WITH(sweep::plan_jobs(o), Catch::Contains("pipedream"));
  o = options("/tmp/x");
  o.run_args = {"--max-steps", "5", "--results-dir=/elsewhere"};
  CHECK_THROWS_WITH(sweep::plan_jobs(o), Catch::Contains("--results-dir"));
}

TEST_CASE("one script per combination plus the baseline, with the layout sbatch reads", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "sweep");
  auto s = sweep::write_sweep(o);
  // 3 distributed strategies x 2 node counts x 2 GPU counts + baseline 1x1.
  REQUIRE(s.jobs.size() == 13);
  std::set<std::string> names;
  for (const auto& j : s.jobs) names.insert(j.name);
  CHECK(names.size() == 13);
  CHECK(names.count("baseline-1x1") == 1);
  CHECK(std::count_if(s.jobs.begin(), s.jobs.end(), [](auto& j) { return j.strategy == "baseline"; }) == 1);
  for (const char* n : {"ddp-1x1", "ddp-1x2", "ddp-2x1", "ddp-2x2", "fsdp-2x2", "zero-1x2"})
    CHECK(names.count(n) == 1);

  size_t files = 0;
  for (auto& e : fs::directory_iterator(s.dir / "jobs")) files += e.path().extension() == ".sbatch";
  CHECK(files == 13);
  for (const auto& j : s.jobs) {
    INFO(j.name);
    auto text = test::slurp(s.dir / j.script);
    auto opt = sbatch_options(text);
    CHECK(opt.find("--nodes")->second == std::to_string(j.nodes));
    CHECK(opt.find("--ntasks-per-node")->second == std::to_string(j.gpus_per_node));
    CHECK(opt.find("--gres")->second == "gpu:" + std::to_string(j.gpus_per_node));
    CHECK(opt.find("--output")->second == (s.dir / "logs" / (j.name + "-%j.out")).string());
    for (const auto& site : kSiteOptions) CHECK(opt.count(site) == 0);
    // Nothing site-specific hides in the body either.
    CHECK(text.find("--partition") == std::string::npos);
    CHECK(text.find("--account") == std::string::npos);
    auto srun = srun_line(text);
    CHECK(srun.find("--strategy " + j.strategy + " ") != std::string::npos);
    CHECK(srun.find("--results-dir " + (s.dir / "runs").string() + " ") != std::string::npos);
    CHECK(srun.find("--run-name " + j.name) != std::string::npos);
    CHECK(srun.find("/opt/hpcbench/bin/hpcbench run") != std::string::npos);
    CHECK(srun.find("--device") == std::string::npos);
    CHECK(text.find("export NCCL_DEBUG=") != std::string::npos);
    CHECK(text.find("OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK") != std::string::npos);
    // bash accepts it.
    CHECK(test::sh("bash -n " + (s.dir / j.script).string()).status == 0);
  }
  CHECK_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("already holds a sweep"));
}

TEST_CASE("site options and run flags pass through verbatim", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "s");
  o.strategies = {"ddp"};
  o.nodes = {4};
  o.gpus_per_node = {4};
  o.partition = "gpu-a100";
  o.account = "proj123";
  o.time = "00:30:00";
  o.constraint = "a100&ib";
  o.qos = "short";
  o.gres_type = "a100";
  o.cpus_per_task = 8;
  o.run_args = {"--max-steps", "100", "--model", "bert base"};
  auto s = sweep::write_sweep(o);
  REQUIRE(s.jobs.size() == 2);
  auto text = test::slurp(s.dir / s.jobs[1].script);
  auto opt = sbatch_options(text);
  CHECK(opt.find("--partition")->second == "gpu-a100");
  CHECK(opt.find("--account")->second == "proj123");
  CHECK(opt.find("--time")->second == "00:30:00");
  CHECK(opt.find("--constraint")->second == "a100&ib");
  CHECK(opt.find("--qos")->second == "short");
  CHECK(opt.find("--gres")->second == "gpu:a100:4");
  CHECK(opt.find("--cpus-per-task")->second == "8");
  CHECK(opt.find("--nodes")->second == "4");
  CHECK(opt.find("--ntasks-per-node")->second == "4");
  // The words reach hpcbench run as given: let bash split the srun line.
  auto split = tmp.path / "split.sh";
  test::sh("cat > " + split.string() + " <<'EOF'\nsrun_opts=()\nset -- " + srun_line(text).substr(5) +
           "\nprintf '%s\\n' \"$@\"\nEOF\n");
  auto words = test::sh("bash " + split.string());
  auto w = test::lines_of(words.out);
  REQUIRE(w.size() >= 4);
  CHECK(std::vector<std::string>(w.end() - 4, w.end()) ==
        std::vector<std::string>{"--max-steps", "100", "--model", "bert base"});
}

TEST_CASE("CPU mode: no GPUs requested, one rank per slot, device cpu", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "cpu");
  o.cpu = true;
  o.strategies = {"ddp"};
  o.nodes = {2};
  o.gpus_per_node = {8};
  auto s = sweep::write_sweep(o);
  auto text = test::slurp(s.dir / s.jobs[1].script);
  auto opt = sbatch_options(text);
  CHECK(opt.count("--gres") == 0);
  CHECK(opt.find("--ntasks-per-node")->second == "8");
  CHECK(opt.find("--nodes")->second == "2");
  CHECK(srun_line(text).find("--device cpu") != std::string::npos);
  CHECK(text.find("NCCL") == std::string::npos);
  CHECK(text.find("GLOO_SOCKET_IFNAME") != std::string::npos);
  CHECK(sweep::read_manifest(s.dir).options.cpu);
}

TEST_CASE("the manifest lists every job and reads back", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "m");
  o.time = "01:00:00";
  auto s = sweep::write_sweep(o);
  auto j = nlohmann::json::parse(test::slurp(s.dir / "sweep.json"));
  CHECK(j["schema"] == "hpcbench-sweep/1");
  CHECK(j["sweep_dir"] == s.dir.string());
  REQUIRE(j["jobs"].size() == s.jobs.size());
  for (const auto& jj : j["jobs"]) {
    CHECK(fs::exists(s.dir / jj["script"].get<std::string>()));
    CHECK(jj["run_dir"] == "runs/" + jj["name"].get<std::string>());
    CHECK(jj["world_size"] == jj["nodes"].get<int>() * jj["gpus_per_node"].get<int>());
    CHECK(jj["job_id"].is_null());
    CHECK(jj["state"] == "written");
  }
  auto back = sweep::read_manifest(s.dir);
  CHECK(back.options.time == "01:00:00");
  REQUIRE(back.jobs.size() == s.jobs.size());
  CHECK(back.jobs[3].name == s.jobs[3].name);
  CHECK(back.jobs[3].run_dir == s.jobs[3].run_dir);
  test::sh("echo '{\"schema\": \"other\"}' > " + (tmp.path / "sweep.json").string());
  CHECK_THROWS_WITH(sweep::read_manifest(tmp.path), Catch::Contains("sweep.json"));
}

TEST_CASE("submission records each job id, and what sbatch refused", "[sweep]") {
  CHECK(sweep::parse_job_id("1234\n") == "1234");
  CHECK(sweep::parse_job_id("sbatch: warning: x\n77;cluster\n") == "77");
  CHECK(sweep::parse_job_id("sbatch: error: Batch job submission failed\n") == "");
  test::TempDir tmp;
  // A stand-in sbatch: numbers the jobs, refuses the fsdp ones as a real
  // one refuses an invalid --gres, and logs what it was given.
  auto fake = tmp.path / "sbatch";
  test::sh("cat > " + fake.string() + " <<'EOF'\n#!/bin/bash\n"
           "echo \"$*\" >> " + (tmp.path / "calls").string() + "\n"
           "case $2 in *fsdp*) echo 'sbatch: error: Invalid generic resource (gres) specification' >&2; exit 1;; esac\n"
           "n=$(wc -l < " + (tmp.path / "calls").string() + "); echo $((1000 + n))\nEOF\nchmod +x " + fake.string());
  auto o = options(tmp.path / "sub");
  o.strategies = {"ddp", "fsdp"};
  o.nodes = {1};
  o.gpus_per_node = {1, 2};
  auto s = sweep::write_sweep(o);
  auto summary = sweep::submit_sweep(s, fake.string());
  CHECK(summary.submitted == 3);
  CHECK(summary.failed == 2);
  auto back = sweep::read_manifest(s.dir);
  for (const auto& j : back.jobs) {
    INFO(j.name);
    if (j.strategy == "fsdp") {
      CHECK(j.state == "submit_failed");
      CHECK(!j.job_id);
      CHECK_THAT(j.submit_error, Catch::Contains("Invalid generic resource"));
    } else {
      CHECK(j.state == "submitted");
      REQUIRE(j.job_id);
      CHECK(std::stoi(*j.job_id) > 1000);
    }
  }
  auto calls = test::lines_of(test::slurp(tmp.path / "calls"));
  REQUIRE(calls.size() == 5);
  CHECK(calls[0] == "--parsable " + (s.dir / "jobs/baseline-1x1.sbatch").string());
  // Submitting again only retries what did not go through.
  sweep::submit_sweep(back, fake.string());
  CHECK(test::lines_of(test::slurp(tmp.path / "calls")).size() == 7);
}

TEST_CASE("the shipped job scripts: commented, layouts as named, nothing site-specific", "[slurm]") {
  auto dir = test::source_dir() / "slurm";
  struct Layout { const char* file; const char* nodes; const char* tasks; const char* gres; };
  std::vector<Layout> layouts = {{"hpcbench.sbatch", "1", "1", "gpu:1"},
                                 {"a100-1x2.sbatch", "1", "2", "gpu:a100:2"},
                                 {"a100-2x2.sbatch", "2", "2", "gpu:a100:2"},
                                 {"gpu-4x4.sbatch", "4", "4", "gpu:4"}};
  for (const auto& l : layouts) {
    INFO(l.file);
    auto text = test::slurp(dir / l.file);
    REQUIRE(!text.empty());
    auto opt = sbatch_options(text);
    CHECK(opt.find("--nodes")->second == l.nodes);
    CHECK(opt.find("--ntasks-per-node")->second == l.tasks);
    CHECK(opt.find("--gres")->second == l.gres);
    for (const auto& site : kSiteOptions) CHECK(opt.count(site) == 0);
    for (const auto& line : test::lines_of(text))
      if (line.rfind("#SBATCH", 0) == 0) CHECK(line.find(" # ") != std::string::npos);
    // The time limit's signal ahead of it, so that the ranks write what they measured.
    CHECK(opt.find("--signal")->second == "USR1@120");
    CHECK(test::sh("bash -n " + (dir / l.file).string()).status == 0);
  }
  auto main_text = test::slurp(dir / "hpcbench.sbatch");
  for (const char* var : {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE", "NCCL_DEBUG",
                          "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK", "STRATEGY"})
    CHECK_THAT(main_text, Catch::Contains(var));
}

TEST_CASE("the main job script passes settings and run flags to srun", "[slurm]") {
  // Outside SLURM, with srun and hpcbench stood in: what would each rank run?
  test::TempDir tmp;
  auto bin = tmp.path / "bin";
  fs::create_directories(bin);
  test::sh("printf '#!/bin/bash\\necho \"SRUN $*\"\\n' > " + (bin / "srun").string() + " && chmod +x " +
           (bin / "srun").string() + " && cp /bin/true " + (tmp.path / "hpcbench").string());
  auto script = (test::source_dir() / "slurm" / "hpcbench.sbatch").string();
  std::string env = "cd " + tmp.path.string() + " && PATH=" + bin.string() + ":$PATH HPCBENCH=" +
                    (tmp.path / "hpcbench").string() + " SLURM_JOB_ID=42 SLURM_JOB_NUM_NODES=2 " +
                    "SLURM_NTASKS_PER_NODE=4 SLURM_CPUS_PER_TASK=6 ";
  auto r = test::sh(env + "STRATEGY=fsdp bash " + script + " PRINT_ENV=0 --max-steps 7");
  INFO(r.out);
  REQUIRE(r.status == 0);
  auto lines = test::lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1] == "SRUN --kill-on-bad-exit=1 --cpus-per-task=6 " + (tmp.path / "hpcbench").string() +
                        " run --strategy fsdp --results-dir " + tmp.path.string() +
                        "/results/runs --run-name fsdp-2x4-42 --max-steps 7");
  // Arguments win over the environment; a run flag replaces the setting.
  r = test::sh(env + "STRATEGY=fsdp bash " + script + " STRATEGY=zero DEVICE=cpu --run-name mine");
  lines = test::lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[1], Catch::Contains("--ntasks=2 --ntasks-per-node=1 --label") && Catch::EndsWith(" env"));
  CHECK_THAT(lines[2], Catch::Contains("run --strategy zero --results-dir") &&
                           Catch::EndsWith("--device cpu --run-name mine"));
  CHECK_THAT(lines[2], !Catch::Contains("zero-2x4-42"));
}

TEST_CASE("--repeats 2: two jobs per configuration sharing a repeat group, read back from the manifest", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "sweep");
  o.strategies = {"baseline", "ddp"};
  o.nodes = {2};
  o.gpus_per_node = {1};
  o.repeats = 2;
  auto s = sweep::write_sweep(o);
  REQUIRE(s.jobs.size() == 4);
  std::vector<std::string> names;
  for (const auto& j : s.jobs) names.push_back(j.name);
  CHECK(names == std::vector<std::string>{"baseline-1x1-r1", "baseline-1x1-r2", "ddp-2x1-r1", "ddp-2x1-r2"});
  for (const auto& j : s.jobs) {
    INFO(j.name);
    auto srun = srun_line(test::slurp(s.dir / j.script));
    CHECK(srun.find("--run-name " + j.name) != std::string::npos);
    CHECK(srun.find("--repeat-group " + j.repeat_group + " --repeat-index " + std::to_string(j.repeat_index)) !=
          std::string::npos);
    CHECK(j.run_dir == fs::path("runs") / j.name);
  }
  auto back = sweep::read_manifest(s.dir);
  REQUIRE(back.jobs.size() == 4);
  CHECK(back.jobs[3].repeat_group == "ddp-2x1");
  CHECK(back.jobs[3].repeat_index == 2);
  o.repeats = 0;
  o.out_dir = tmp.path / "other";
  CHECK_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("--repeats 0: must be at least 1"));
  o.repeats = 1;
  o.run_args = {"--repeats", "3"};
  CHECK_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("the sweep sets --repeats itself"));
}

namespace {

// An executable shell script at `path` with `body` after the #! line.
void script(const fs::path& path, const std::string& body) {
  test::sh("cat > " + path.string() + " <<'EOF'\n#!/bin/bash\n" + body + "\nEOF\nchmod +x " + path.string());
}

std::map<std::string, sweep::SweepJob> by_name(const sweep::Sweep& s) {
  std::map<std::string, sweep::SweepJob> out;
  for (const auto& j : s.jobs) out[j.name] = j;
  return out;
}

}  // namespace

TEST_CASE("a site's sbatch that answers 'Submitted batch job N' despite --parsable is understood", "[sweep]") {
  CHECK(sweep::parse_job_id("Submitted batch job 4242\n") == "4242");
  CHECK(sweep::parse_job_id("sbatch: warning: can't honor --ntasks-per-node\nSubmitted batch job 17 on cluster c2\n") ==
        "17");
  CHECK(sweep::parse_job_id("Submitted batch job\n") == "");
  CHECK(sweep::parse_job_id("Submitted batch job 12abc\n") == "");
  test::TempDir tmp;
  // The wrapper some sites put before sbatch: it drops --parsable.
  auto fake = tmp.path / "sbatch";
  script(fake, "echo \"$*\" >> " + (tmp.path / "calls").string() + "\necho 'Site policy: jobs are accounted to "
               "proj123'\nn=$(wc -l < " + (tmp.path / "calls").string() + ")\necho \"Submitted batch job $((500 + n))\"");
  auto o = options(tmp.path / "sub");
  o.strategies = {"ddp"};
  o.nodes = {1};
  o.gpus_per_node = {2};
  auto s = sweep::write_sweep(o);
  auto summary = sweep::submit_sweep(s, fake.string());
  CHECK(summary.submitted == 2);
  CHECK(summary.failed == 0);
  auto back = sweep::read_manifest(s.dir);
  CHECK(back.jobs[0].job_id == std::optional<std::string>("501"));
  CHECK(back.jobs[1].job_id == std::optional<std::string>("502"));
  CHECK(back.jobs[1].state == "submitted");
}

TEST_CASE("an sbatch that hangs is stopped, and submission ends there with what to do", "[sweep]") {
  test::TempDir tmp;
  // It hangs with a child of its own holding the output open, as a wrapper
  // waiting on a dead slurmctld does.
  auto fake = tmp.path / "sbatch";
  script(fake, "echo \"$*\" >> " + (tmp.path / "calls").string() + "\nsleep 60 &\nsleep 60");
  auto o = options(tmp.path / "hang");
  o.strategies = {"ddp"};
  o.nodes = {1};
  o.gpus_per_node = {1, 2};
  auto s = sweep::write_sweep(o);
  auto summary = sweep::submit_sweep(s, fake.string(), 0.5);
  CHECK(summary.timed_out);
  CHECK(summary.failed == 1);
  CHECK(summary.submitted == 0);
  auto back = sweep::read_manifest(s.dir);
  CHECK(back.jobs[0].state == "submit_failed");
  CHECK_THAT(back.jobs[0].submit_error, Catch::Contains("did not answer within 0.5 s") &&
                                            Catch::Contains("squeue --me -n hpcbench-baseline-1x1"));
  // The others were not tried: each would have hung as long.
  CHECK(back.jobs[1].state == "written");
  CHECK(back.jobs[2].state == "written");
  CHECK(test::lines_of(test::slurp(tmp.path / "calls")).size() == 1);
  CHECK_THROWS_WITH(sweep::submit_sweep(back, fake.string(), 0), Catch::Contains("--sbatch-timeout"));
}

TEST_CASE("a sweep resumes into its own folder: only what is missing or failed is submitted", "[sweep]") {
  test::TempDir tmp;
  auto calls = tmp.path / "calls";
  auto fake = tmp.path / "sbatch";
  // Refuses fsdp the first time (a transient site error), numbers the jobs.
  script(fake, "echo \"$*\" >> " + calls.string() + "\nif [[ $2 == *fsdp* && ! -e " + (tmp.path / "fixed").string() +
                   " ]]; then echo 'sbatch: error: Socket timed out' >&2; exit 1; fi\n"
                   "n=$(wc -l < " + calls.string() + "); echo $((1000 + n))");
  // squeue still has job 1002 waiting; every other job has left the queue.
  auto squeue = tmp.path / "squeue";
  script(squeue, "case \"$*\" in *' 1002'*) echo PENDING;; esac\nexit 0");
  ::setenv("HPCBENCH_SQUEUE", squeue.c_str(), 1);

  auto o = options(tmp.path / "sweep");
  o.strategies = {"ddp", "fsdp"};
  o.nodes = {1};
  o.gpus_per_node = {1, 2};
  auto s = sweep::write_sweep(o);
  CHECK_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("--resume"));
  auto first = sweep::submit_sweep(s, fake.string());
  CHECK(first.submitted == 3);  // baseline 1001, ddp-1x1 1002, ddp-1x2 1003
  CHECK(first.failed == 2);     // fsdp-1x1, fsdp-1x2
  // baseline finished; ddp-1x2 ended without results (its log is there).
  fs::create_directories(s.dir / "runs/baseline-1x1");
  test::sh("echo x > " + (s.dir / "runs/baseline-1x1/summary.csv").string());
  test::sh("echo 'CUDA error' > " + (s.dir / "logs/ddp-1x2-1003.out").string());
  fs::remove(s.dir / "jobs/fsdp-1x2.sbatch");

  auto back = sweep::read_manifest(s.dir);
  auto plan = sweep::prepare_resume(back, s.dir);
  std::map<std::string, std::string> kept, again;
  for (auto& k : plan.kept) kept[k.job] = k.progress;
  for (auto& r : plan.resubmit) again[r.job] = r.progress;
  CHECK(kept == std::map<std::string, std::string>{{"baseline-1x1", "done"}, {"ddp-1x1", "pending"}});
  CHECK(again == std::map<std::string, std::string>{
                     {"ddp-1x2", "failed"}, {"fsdp-1x1", "submit_failed"}, {"fsdp-1x2", "submit_failed"}});
  CHECK(fs::exists(s.dir / "jobs/fsdp-1x2.sbatch"));  // written again

  test::sh("touch " + (tmp.path / "fixed").string());
  auto second = sweep::submit_sweep(back, fake.string());
  CHECK(second.submitted == 3);
  CHECK(second.failed == 0);
  auto c = test::lines_of(test::slurp(calls));
  REQUIRE(c.size() == 8);
  std::set<std::string> resent(c.begin() + 5, c.end());
  CHECK(resent == std::set<std::string>{"--parsable " + (s.dir / "jobs/ddp-1x2.sbatch").string(),
                                        "--parsable " + (s.dir / "jobs/fsdp-1x1.sbatch").string(),
                                        "--parsable " + (s.dir / "jobs/fsdp-1x2.sbatch").string()});
  auto jobs = by_name(sweep::read_manifest(s.dir));
  CHECK(jobs["ddp-1x2"].previous_job_ids == std::vector<std::string>{"1003"});
  CHECK(jobs["ddp-1x2"].state == "submitted");
  CHECK(jobs["ddp-1x1"].job_id == std::optional<std::string>("1002"));
  CHECK(jobs["baseline-1x1"].job_id == std::optional<std::string>("1001"));
  CHECK(jobs["fsdp-1x1"].state == "submitted");

  // A moved sweep folder: its scripts still name the old path.
  fs::rename(s.dir, tmp.path / "moved");
  auto moved = sweep::read_manifest(tmp.path / "moved");
  CHECK_THROWS_WITH(sweep::prepare_resume(moved, tmp.path / "moved"), Catch::Contains("was written for"));
  ::unsetenv("HPCBENCH_SQUEUE");
}

// --time is read as SLURM reads it, before any job is
// written; and the signal the scripts ask for fits inside the limit.
TEST_CASE("--time is checked as sbatch reads it, and the stop signal comes ahead of the limit", "[sweep]") {
  CHECK(sweep::parse_slurm_time("30") == 1800);
  CHECK(sweep::parse_slurm_time("30:15") == 1815);
  CHECK(sweep::parse_slurm_time("01:30:00") == 5400);
  CHECK(sweep::parse_slurm_time("2-0") == 172800);
  CHECK(sweep::parse_slurm_time("1-02:03") == 93780);
  CHECK(sweep::parse_slurm_time("1-02:03:04") == 93784);
  CHECK(sweep::parse_slurm_time("") == std::nullopt);
  CHECK(sweep::parse_slurm_time("UNLIMITED") == std::nullopt);
  CHECK(sweep::parse_slurm_time("0") == std::nullopt);
  for (const char* bad : {"abc", "1:2:3:4", "25:99:99:1", "-5", "1-", "1-2-3", "1h", "00:30:00 ", "1:-1"}) {
    INFO(bad);
    CHECK_THROWS_WITH(sweep::parse_slurm_time(bad), Catch::Contains(std::string("--time ") + bad));
  }
  test::TempDir tmp;
  auto o = options(tmp.path / "bad");
  o.time = "30 minutes";
  CHECK_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("--time 30 minutes: not a SLURM time"));
  CHECK_FALSE(fs::exists(tmp.path / "bad"));
  // 2 minutes: the signal comes a quarter of the limit before its end, not
  // 120 s (which SLURM would send at once).
  o = options(tmp.path / "short");
  o.time = "2";
  auto s = sweep::write_sweep(o);
  CHECK(sbatch_options(test::slurp(s.dir / s.jobs[0].script)).find("--signal")->second == "USR1@30");
  o = options(tmp.path / "long");
  o.time = "04:00:00";
  s = sweep::write_sweep(o);
  CHECK(sbatch_options(test::slurp(s.dir / s.jobs[0].script)).find("--signal")->second == "USR1@120");
}

TEST_CASE("a job a time limit interrupted is said so, and resume leaves its results as they are", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "sweep");
  o.strategies = {"ddp"};
  o.nodes = {1};
  o.gpus_per_node = {2};
  auto s = sweep::write_sweep(o);
  results::RunResult r;
  r.status = "interrupted";
  r.steps = 15;
  results::write_run_folder(s.dir / "runs", "ddp-1x2", r);
  auto jobs = by_name(s);
  CHECK(sweep::job_progress(s, jobs["ddp-1x2"]) == "interrupted");
  CHECK(sweep::job_progress(s, jobs["baseline-1x1"]) == "written");
  auto back = sweep::read_manifest(s.dir);
  auto plan = sweep::prepare_resume(back, s.dir);
  REQUIRE(plan.kept.size() == 1);
  CHECK(plan.kept[0].job == "ddp-1x2");
  CHECK(plan.kept[0].progress == "interrupted");
  // Not among the jobs without results: the report reads its folder.
  for (auto& u : sweep::unfinished_jobs(back)) CHECK(u.run_id != "ddp-1x2");
}

TEST_CASE("tensor jobs: their layouts, and --global-batch split over the data-parallel replicas alone", "[sweep]") {
  test::TempDir tmp;
  auto o = options(tmp.path / "s");
  o.strategies = {"ddp", "tensor:tp-size=2", "tensor:tp-size=4"};
  o.nodes = {1, 2};
  o.gpus_per_node = {4};
  o.global_batch = 32;
  auto s = sweep::write_sweep(o);
  std::map<std::string, std::string> srun;
  for (auto& j : s.jobs) srun[j.name] = srun_line(test::slurp(s.dir / j.script));
  REQUIRE(srun.count("tensor-tp-size2-2x4"));
  // 8 ranks in groups of 2: 4 replicas of 8 sequences; ddp's 8 replicas of 4.
  CHECK(srun["tensor-tp-size2-2x4"].find("--strategy tensor:tp-size=2 ") != std::string::npos);
  CHECK(srun["tensor-tp-size2-2x4"].find("--batch-size 8") != std::string::npos);
  CHECK(srun["tensor-tp-size4-1x4"].find("--batch-size 32") != std::string::npos);
  CHECK(srun["ddp-2x4"].find("--batch-size 4") != std::string::npos);
  // Sizes that do not fit the job, and a group that would span nodes, are
  // refused naming the flag.
  o.strategies = {"tensor:tp-size=8"};
  REQUIRE_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("--tp-size 8: does not divide the job's 4 ranks"));
  o.nodes = {2};
  REQUIRE_THROWS_WITH(sweep::write_sweep(o), Catch::Contains("--tp-size 8") && Catch::Contains("one node"));
}
