// The job scripts on a real SLURM cluster: two nodes (n1, n2) started on this
// machine by tools/slurm/cluster.sh. Where SLURM cannot run (no root, no
// packages) the cases say so and pass, as cluster.sh exits 77.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "slurm_test_util.h"
#include "test_env.h"

namespace fs = std::filesystem;
using namespace hpcbench;
using Clock = std::chrono::steady_clock;

namespace {

std::string cluster_sh() { return (test::source_dir() / "tools/slurm/cluster.sh").string(); }

// Starts the cluster when the fixture has not (running one case alone); false
// when this machine cannot run one.
bool cluster_up() {
  auto r = test::sh(cluster_sh() + " start");
  if (r.status == 77) {
    // ctest marks the case skipped on this word (SKIP_REGULAR_EXPRESSION).
    std::cout << "SKIPPED: no local SLURM cluster here: " << r.out << std::endl;
    WARN("SKIPPED: no local SLURM cluster here: " << r.out);
    SUCCEED();
    return false;
  }
  INFO(r.out);
  REQUIRE(r.status == 0);
  return true;
}

std::string submit(const std::string& args) {
  auto r = test::sh("sbatch --parsable " + args);
  INFO("sbatch " << args << "\n" << r.out);
  REQUIRE(r.status == 0);
  std::smatch m;
  std::string out = r.out;
  REQUIRE(std::regex_search(out, m, std::regex(R"((\d+)\s*$)")));
  return m[1];
}

std::string job_state(const std::string& id) {
  auto r = test::sh("scontrol -o show job " + id);
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex(R"(JobState=(\S+))"))) return m[1];
  return "UNKNOWN";
}

// Waits until the job has ended; returns its final state.
std::string wait_job(const std::string& id, double timeout_s) {
  auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string s;
  while (Clock::now() < end) {
    s = job_state(id);
    if (s != "PENDING" && s != "RUNNING" && s != "CONFIGURING" && s != "COMPLETING") return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  test::sh("scancel " + id);
  FAIL("job " << id << " still " << s << " after " << timeout_s << " s");
  return s;
}

// "<rank>: KEY   value" lines of `srun --label` output, by rank.
std::map<int, std::map<std::string, std::string>> by_rank(const std::string& log) {
  std::map<int, std::map<std::string, std::string>> out;
  std::regex line(R"(^\s*(\d+): ([A-Z_]+)[= ]\s*(.*?)\s*$)");
  for (const auto& l : test::lines_of(log)) {
    std::smatch m;
    if (std::regex_match(l, m, line)) out[std::stoi(m[1])][m[2]] = m[3];
  }
  return out;
}

}  // namespace

TEST_CASE("a 2-node job: rank 0 on n1, rank 1 on n2, seen by hpcbench env", "[env]") {
  if (!cluster_up()) return;
  test::TempDir tmp;
  auto script = tmp.path / "env.sbatch";
  test::sh("cat > " + script.string() + " <<'EOF'\n#!/bin/bash\n"
           "#SBATCH --job-name=hpcbench-test-env\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
           "#SBATCH --time=1\n#SBATCH --output=" + (tmp.path / "env-%j.out").string() + "\n"
           "srun --label bash -c 'echo \"SLURMD_NODENAME=$SLURMD_NODENAME\"; exec " +
           test::hpcbench_bin().string() + " env'\nEOF\n");
  auto id = submit(script.string());
  CHECK(wait_job(id, 60) == "COMPLETED");
  auto log = test::slurp(tmp.path / ("env-" + id + ".out"));
  INFO(log);
  auto ranks = by_rank(log);
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0]["SLURM_PROCID"] == "0");
  CHECK(ranks[0]["SLURMD_NODENAME"] == "n1");
  CHECK(ranks[0]["SLURM_NODEID"] == "0");
  CHECK(ranks[0]["SLURM_TOPOLOGY_ADDR"] == "n1");
  CHECK(ranks[1]["SLURM_PROCID"] == "1");
  CHECK(ranks[1]["SLURMD_NODENAME"] == "n2");
  CHECK(ranks[1]["SLURM_NODEID"] == "1");
  CHECK(ranks[1]["SLURM_TOPOLOGY_ADDR"] == "n2");
  for (int r : {0, 1}) {
    CHECK(ranks[r]["SLURM_NTASKS"] == "2");
    CHECK(ranks[r]["SLURM_JOB_ID"] == id);
    CHECK(ranks[r]["SLURM_STEP_NODELIST"] == "n[1-2]");
  }
}

TEST_CASE("a baseline sweep submitted with sbatch writes its run folder", "[sweep]") {
  if (!cluster_up()) return;
  test::TempDir tmp;
  auto bin = test::hpcbench_bin().string();
  auto dir = tmp.path / "sweep";
  auto r = test::sh(bin + " sweep --strategies baseline --nodes 1 --gpus-per-node 1 --cpu --submit --time 2 --out " +
                    dir.string() + " -- --max-steps 5 --synthetic-samples 64 --log-every 1");
  INFO(r.out);
  REQUIRE(r.status == 0);
  auto manifest = nlohmann::json::parse(test::slurp(dir / "sweep.json"));
  REQUIRE(manifest["jobs"].size() == 1);
  auto job = manifest["jobs"][0];
  CHECK(job["state"] == "submitted");
  REQUIRE(job["job_id"].is_string());
  auto id = job["job_id"].get<std::string>();
  auto state = wait_job(id, 100);
  auto log_path = dir / std::regex_replace(job["log"].get<std::string>(), std::regex("%j"), id);
  auto log = test::slurp(log_path);
  INFO("log " << log_path << ":\n" << log);
  CHECK(log.find("hpcbench sweep job " + id + ": baseline-1x1") != std::string::npos);
  // Without lib/train, 'run' is not a command and --help prints the main help.
  if (test::sh(bin + " run --help").out.find("--max-steps") == std::string::npos) {
    std::cout << "SKIPPED the run itself: this hpcbench has no 'run' command (lib/train not in the build); "
                 "the job was queued and ran, state " << state << std::endl;
    WARN("SKIPPED the run itself: no 'run' command in this hpcbench");
    return;
  }
  CHECK(state == "COMPLETED");
  auto run_dir = dir / job["run_dir"].get<std::string>();
  CHECK(fs::exists(run_dir / "summary.csv"));
  CHECK(fs::exists(run_dir / "run.json"));
}

TEST_CASE("a job one of whose tasks is killed ends FAILED with the error in its log", "[fail]") {
  if (!cluster_up()) return;
  test::TempDir tmp;
  // A stand-in hpcbench whose 'run' records its pid and hangs, as a rank
  // waiting in a collective would.
  auto fake = tmp.path / "hpcbench";
  test::sh("cat > " + fake.string() + " <<'EOF'\n#!/bin/bash\n[[ $1 == run ]] || exit 0\n"
           "echo $$ > " + tmp.path.string() + "/pid-$SLURM_PROCID\necho \"rank $SLURM_PROCID on $SLURMD_NODENAME\"\n"
           "exec sleep 300\nEOF\nchmod +x " + fake.string());
  auto log = tmp.path / "fail-%j.out";
  auto t0 = Clock::now();
  auto id = submit("--gres=none --nodes=2 --ntasks-per-node=1 --time=1 --output=" + log.string() + " " +
                   (test::source_dir() / "slurm/hpcbench.sbatch").string() + " HPCBENCH=" + fake.string() +
                   " PRINT_ENV=0 STRATEGY=ddp");
  auto pid_file = tmp.path / "pid-1";
  while (!fs::exists(pid_file) || test::slurp(pid_file).empty()) {
    REQUIRE(Clock::now() - t0 < std::chrono::seconds(30));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int pid = std::stoi(test::slurp(pid_file));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  auto state = wait_job(id, 55);
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(took < 60);  // the job's time limit: ended by the failure, not by the limit
  CHECK(state == "FAILED");
  auto text = test::slurp(tmp.path / ("fail-" + id + ".out"));
  INFO(text);
  CHECK_THAT(text, Catch::Contains("task 1") && Catch::Contains("Killed"));
}
