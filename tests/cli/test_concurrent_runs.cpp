// Issue 44, class 3: runs of one name at once. The folder's name is claimed
// before the first step (results/run_folder.h), so two runs started side by
// side never take one name: the loser of the old race deleted its finished
// folder and failed with "Directory not empty". The overlap is made
// certain, not left to luck: HPCBENCH_INJECT's rename_delay_ms holds each
// run between writing its folder and renaming it into place, which is where
// both runs stood when the old code lost one of them.
#include "test_catch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kRun =
    " run --strategy baseline --batch-size 8 --synthetic-samples 64 --max-seq-length 64 --threads 1 --max-steps 3";

// Starts each command at once, then waits for all: their exit statuses.
std::vector<int> run_together(const std::vector<std::string>& commands, const std::vector<fs::path>& logs) {
  std::vector<pid_t> pids;
  for (size_t i = 0; i < commands.size(); ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      const std::string cmd = "exec " + commands[i] + " > " + logs[i].string() + " 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

std::vector<std::string> visible_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (!e.path().filename().string().starts_with(".")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("two runs of one name at once each keep their results, under names claimed before the first step") {
  test::TempDir dir;
  const auto results = dir.path / "results";
  const std::string cmd = "env HPCBENCH_INJECT=rename_delay_ms=3000 " + test::hpcbench_bin().string() + kRun +
                          " --run-name same --tensorboard on --results-dir " + results.string();
  const std::vector<fs::path> logs = {dir.path / "a.log", dir.path / "b.log"};
  auto codes = run_together({cmd, cmd}, logs);
  INFO(test::slurp(logs[0]) + "\n----\n" + test::slurp(logs[1]));
  CHECK(codes == std::vector<int>{0, 0});
  // Both folders, whole, each naming itself; no claim or temporary left.
  for (const char* name : {"same", "same-2"}) {
    INFO(name);
    REQUIRE(fs::exists(results / name / "run.json"));
    auto run = nlohmann::json::parse(test::slurp(results / name / "run.json"));
    CHECK(run["result"]["run_id"] == name);
    CHECK(run["steps"].size() == 3);
    int events = 0;
    for (auto& e : fs::directory_iterator(results / name))
      events += e.path().filename().string().starts_with("events.out.tfevents.");
    CHECK(events == 1);
  }
  std::vector<std::string> left;
  for (auto& e : fs::recursive_directory_iterator(results)) {
    const auto n = e.path().filename().string();
    if (n.find("partial") != std::string::npos) left.push_back(e.path().string());
  }
  CHECK(left.empty());
  CHECK(visible_entries(results) == std::vector<std::string>{"same", "same-2"});
}

TEST_CASE("two --repeats of one name at once get distinct repeat groups") {
  test::TempDir dir;
  const auto results = dir.path / "results";
  const std::string cmd = "env HPCBENCH_INJECT=rename_delay_ms=1000 " + test::hpcbench_bin().string() + kRun +
                          " --repeats 2 --run-name grp --tensorboard off --results-dir " + results.string();
  const std::vector<fs::path> logs = {dir.path / "a.log", dir.path / "b.log"};
  auto codes = run_together({cmd, cmd}, logs);
  INFO(test::slurp(logs[0]) + "\n----\n" + test::slurp(logs[1]));
  CHECK(codes == std::vector<int>{0, 0});
  std::map<std::string, std::set<int64_t>> groups;  // repeat_group -> repeat indices
  for (auto& e : fs::directory_iterator(results)) {
    if (e.path().filename().string().starts_with(".")) continue;
    auto run = nlohmann::json::parse(test::slurp(e.path() / "run.json"));
    groups[run["result"]["repeat_group"].get<std::string>()].insert(run["result"]["repeat_index"].get<int64_t>());
  }
  CHECK(groups.size() == 2);
  for (auto& [group, indices] : groups) {
    INFO(group);
    CHECK(indices == std::set<int64_t>{1, 2});
  }
  // And one after them, of the same name, is a third group, not merged into the first.
  auto r = test::run_command(test::hpcbench_bin().string() + kRun +
                             " --repeats 2 --run-name grp --tensorboard off --results-dir " + results.string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(results / "grp-3-r1"));
  CHECK(fs::exists(results / "grp-3-r2"));
}
