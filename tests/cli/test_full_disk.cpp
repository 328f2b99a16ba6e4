// Issue 33, class 4: every write checked. A results folder on a disk that
// is already full is refused before the first step; one that others fill
// while the run trains still gets the run's results (their space was set
// aside at the start); one that cannot be written at all still leaves the
// summary on the terminal; `report --tensorboard` on a full disk fails
// instead of leaving empty event files. The disks are tmpfs mounts of a
// few KiB (root, or a user namespace where the kernel allows one); where
// neither can mount, the cases skip and say so.
#include "test_catch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kRun =
    " run --strategy baseline --batch-size 8 --synthetic-samples 64 --max-seq-length 64 --threads 1 --log-every 1";

// A tmpfs of `size` at `dir`, unmounted at the end of the scope.
struct Tmpfs {
  fs::path dir;
  bool mounted = false;
  Tmpfs(const fs::path& at, const std::string& size) : dir(at) {
    fs::create_directories(dir);
    mounted = test::run_command("mount -t tmpfs -o size=" + size + " tmpfs " + dir.string()).exit_code == 0;
  }
  ~Tmpfs() {
    if (mounted) test::run_command("umount -l " + dir.string());
  }
  // Fills it up to `leave` bytes free (whole pages).
  void fill(size_t leave = 0) const {
    test::run_command(fmt::format("dd if=/dev/zero of={}/filler bs=4096 2>/dev/null; truncate -s -{} {}/filler",
                                  dir.string(), leave, dir.string()));
  }
};

#define REQUIRE_TMPFS(t)                                                                            \
  if (!(t).mounted) {                                                                               \
    WARN("SKIPPED: cannot mount a tmpfs here (not root); the full-disk cases need one");            \
    return;                                                                                         \
  }

}  // namespace

TEST_CASE("a results folder on a disk already full is refused before the first step", "[disk]") {
  test::TempDir tmp;
  Tmpfs disk(tmp.path / "disk", "64k");
  REQUIRE_TMPFS(disk);
  disk.fill();
  auto r = test::run_command(test::hpcbench_bin().string() + kRun + " --max-steps 5 --results-dir " +
                             (disk.dir / "results").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--results-dir " + (disk.dir / "results").string()) &&
                           Catch::Contains("No space left on device"));
  CHECK_THAT(r.output, !Catch::Contains("step      1/"));
}

TEST_CASE("a disk that fills while the run trains still gets the run's results", "[disk]") {
  test::TempDir tmp;
  Tmpfs disk(tmp.path / "disk", "8m");
  REQUIRE_TMPFS(disk);
  auto results = disk.dir / "results";
  auto log = tmp.path / "log";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = "exec " + test::hpcbench_bin().string() + kRun + " --max-steps 40 --run-name full --results-dir " +
                      results.string() + " > " + log.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Another job fills the disk once the run trains.
  for (int i = 0; i < 6000 && test::slurp(log).find("step      3/") == std::string::npos; ++i) {
    if (test::slurp(log).find("[error]") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  disk.fill();
  CHECK(test::run_command("df -k " + disk.dir.string()).output.find(" 100% ") != std::string::npos);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto out = test::slurp(log);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  REQUIRE(fs::exists(results / "full" / "run.json"));
  auto run = nlohmann::json::parse(test::slurp(results / "full" / "run.json"));
  CHECK(run["steps"].size() == 40);
  CHECK(run["result"]["status"] == "ok");
  CHECK(fs::file_size(results / "full" / "loss.csv") > 0);
}

TEST_CASE("results that cannot be written at all: the summary is still printed, with why", "[disk]") {
  test::TempDir tmp;
  auto results = tmp.path / "results";
  auto log = tmp.path / "log";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = "exec " + test::hpcbench_bin().string() + kRun +
                      " --max-steps 60 --tensorboard off --run-name gone --results-dir " + results.string() + " > " +
                      log.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 6000 && test::slurp(log).find("step      3/") == std::string::npos; ++i) {
    if (test::slurp(log).find("[error]") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The folder goes and a file takes its name: nothing can be written there.
  test::run_command("rm -rf " + results.string() + " && touch " + results.string());
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto out = test::slurp(log);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(out, Catch::Contains("Throughput:") && Catch::Contains("Results: NOT WRITTEN (") &&
                      Catch::Contains("the run's results could not be written"));
}

TEST_CASE("report --tensorboard onto a full disk fails, naming the file, instead of writing empty logs", "[disk]") {
  test::TempDir tmp;
  auto runs = tmp.path / "runs";
  auto r = test::run_command(test::hpcbench_bin().string() + kRun + " --max-steps 3 --tensorboard off --results-dir " +
                             runs.string());
  REQUIRE(r.exit_code == 0);
  Tmpfs disk(tmp.path / "disk", "64k");
  REQUIRE_TMPFS(disk);
  disk.fill(4096);  // one page: the report's marker file, and no more
  auto rep = test::run_command(test::hpcbench_bin().string() + " report " + runs.string() + " --tensorboard " +
                               (disk.dir / "tb").string());
  INFO(rep.output);
  CHECK(rep.exit_code == 2);
  CHECK_THAT(rep.output, Catch::Contains("cannot write the TensorBoard event file " + (disk.dir / "tb").string()) &&
                             Catch::Contains("No space left on device"));
}

// Issue 44, class 2: one results plan. `--dry-run` (and so `sweep` before it
// submits) allocates what the run would set aside, so a disk with room for a
// probe's block but not for the results is refused by both alike.
TEST_CASE("--dry-run refuses a results disk too full for the space the run sets aside", "[disk]") {
  test::TempDir tmp;
  Tmpfs disk(tmp.path / "disk", "1m");  // an empty 1 MiB disk; the results of 5 steps set 1.01 MiB aside
  REQUIRE_TMPFS(disk);
  const auto results = disk.dir / "results";
  for (const char* dry : {" --dry-run", ""}) {
    INFO(dry);
    auto r = test::run_command(test::hpcbench_bin().string() + kRun + dry + " --max-steps 5 --results-dir " +
                               results.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("--results-dir " + results.string()) &&
                             Catch::Contains("No space left on device"));
    CHECK_THAT(r.output, !Catch::Contains("check out") && !Catch::Contains("step      1/"));
  }
}

TEST_CASE("a checkpoint the disk cannot take is refused before the first step, by the run and --dry-run", "[disk]") {
  test::TempDir tmp;
  Tmpfs disk(tmp.path / "disk", "8m");  // bert-tiny's checkpoint is 17 MiB
  REQUIRE_TMPFS(disk);
  const auto ckpt = disk.dir / "w.safetensors";
  for (const char* dry : {" --dry-run", ""}) {
    INFO(dry);
    auto r = test::run_command(test::hpcbench_bin().string() + kRun + dry + " --max-steps 3 --results-dir " +
                               (tmp.path / "results").string() + " --save-checkpoint " + ckpt.string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("--save-checkpoint " + ckpt.string() + ": cannot set aside the"));
    CHECK_THAT(r.output, !Catch::Contains("step      1/"));
  }
  CHECK(test::entries(tmp.path / "results") == 0);
}

TEST_CASE("a checkpoint that fails at the end leaves the results written and marked", "[disk]") {
  test::TempDir tmp;
  Tmpfs disk(tmp.path / "disk", "24m");
  REQUIRE_TMPFS(disk);
  const auto results = tmp.path / "results";
  const auto ckpt = disk.dir / "w.safetensors";
  auto log = tmp.path / "log";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = "exec " + test::hpcbench_bin().string() + kRun + " --max-steps 40 --run-name kept --results-dir " +
                      results.string() + " --save-checkpoint " + ckpt.string() + " > " + log.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Another job fills the checkpoint's disk once the run trains.
  for (int i = 0; i < 6000 && test::slurp(log).find("step      3/") == std::string::npos; ++i) {
    if (test::slurp(log).find("[error]") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  disk.fill();
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto out = test::slurp(log);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  REQUIRE(fs::exists(results / "kept" / "run.json"));
  auto run = nlohmann::json::parse(test::slurp(results / "kept" / "run.json"));
  CHECK(run["steps"].size() == 40);
  CHECK(run["result"]["status"] == "ok");
  CHECK(run["final_checkpoint"]["written"] == false);
  CHECK(run["final_checkpoint"]["path"] == ckpt.string());
  CHECK_THAT(out, Catch::Contains("the checkpoint was not written"));
}
