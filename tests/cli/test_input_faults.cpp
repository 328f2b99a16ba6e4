// Issue 44, class 1, through the real binary: every file a run reads goes
// through the one reader, so a link to /dev/zero or a FIFO given as any
// input is refused, naming its flag, before the first step. Each command
// runs under `timeout -s KILL`: a run that waits on a FIFO's open (SIGTERM
// did not end that wait) or reads /dev/zero until it is killed for memory
// fails the case with 137 instead of hanging the suite.
#include "test_catch.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kDryRun =
    " run --dry-run --strategy baseline --batch-size 8 --synthetic-samples 64 --max-seq-length 64 --threads 1";

test::CommandResult run_binary(const std::string& args) {
  return test::run_command("timeout -s KILL 60 " + test::hpcbench_bin().string() + args);
}

}  // namespace

TEST_CASE("--config linking to /dev/zero is refused, not taken as an empty file") {
  test::TempDir dir;
  const auto link = dir.path / "run.toml";
  fs::create_symlink("/dev/zero", link);
  auto r = run_binary(kDryRun + " --config " + link.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--config " + link.string() + ": not a regular file (a character device"));
  CHECK_THAT(r.output, !Catch::Contains("checks out"));
}

TEST_CASE("--model as a FIFO is refused at once: nothing waits for a writer") {
  test::TempDir dir;
  const auto fifo = dir.path / "config.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = run_binary(kDryRun + " --model " + fifo.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains(fifo.string()) && Catch::Contains("not a regular file (a FIFO)"));
}

TEST_CASE("--checkpoint, --vocab and --train-data that are no regular files are refused before the first step") {
  test::TempDir dir;
  const auto fifo = dir.path / "model.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = run_binary(kDryRun + " --checkpoint " + fifo.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--checkpoint " + fifo.string() + ": not a regular file (a FIFO)"));

  const auto zero = dir.path / "vocab.txt";
  fs::create_symlink("/dev/zero", zero);
  r = run_binary(kDryRun + " --vocab " + zero.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--vocab " + zero.string() + ": not a regular file (a character device"));

  const auto loop = dir.path / "train.json";
  fs::create_symlink(loop, loop);
  r = run_binary(kDryRun + " --train-data " + loop.string() + " --vocab " + test::vocab_file());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--train-data " + loop.string() + ": a loop of symbolic links"));
}
