// Issue 44, class 1, through the real binary: every file a run reads goes
// through the one reader, so a link to /dev/zero or a FIFO given as any
// input is refused, naming its flag, before the first step. Each command
// runs under `timeout -s KILL`: a run that waits on a FIFO's open (SIGTERM
// did not end that wait) or reads /dev/zero until it is killed for memory
// fails the case with 137 instead of hanging the suite.
#include "test_catch.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>
#include <string>

#include <fmt/format.h>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

const std::string kDryRun =
    " run --dry-run --strategy baseline --batch-size 8 --synthetic-samples 64 --max-seq-length 64 --threads 1";

test::CommandResult run_binary(const std::string& args) {
  return test::run_command("timeout -s KILL 60 " + test::hpcbench_bin().string() + args);
}

// The output with the terminal's wrapping undone (a newline and the indent
// after it read as one space), so that a message is found whatever the
// length of the paths in it.
std::string flat(const std::string& out) {
  std::string s;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != '\n') s += out[i];
    else if (s.empty() || s.back() != ' ') s += ' ';
    while (out[i] == '\n' && i + 1 < out.size() && out[i + 1] == ' ') ++i;
  }
  return s;
}

// The same with `env` (variables, or `env -u NAME ...`) before the binary.
test::CommandResult run_binary_env(const std::string& env, const std::string& args) {
  const std::string prefix = env.rfind("env ", 0) == 0 ? env : "env " + env;
  return test::run_command("timeout -s KILL 60 " + prefix + " " + test::hpcbench_bin().string() + args);
}

const std::string kRun =
    " run --strategy baseline --batch-size 8 --synthetic-samples 64 --max-seq-length 64 --threads 1";

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

// Issue 44's fault probe, through the real binary: what failed at a run's
// end or never is refused before the first step, naming the value.
TEST_CASE("a malformed HPCBENCH_INJECT is refused before the first step, nothing written") {
  test::TempDir dir;
  const auto results = dir.path / "results";
  struct Case {
    std::string inject, says;
  };
  for (const Case& c : {Case{"rename_delay_ms=-1", "HPCBENCH_INJECT rename_delay_ms=-1: expected a whole number"},
                        Case{"slow_rank=0:99999999999", "slow_rank=0:99999999999: expected"}}) {
    for (const std::string& mode : {std::string(" --dry-run"), std::string(" --max-steps 2")}) {
      auto r = run_binary_env("HPCBENCH_INJECT='" + c.inject + "'",
                              kRun + mode + " --results-dir " + results.string());
      INFO(c.inject << mode << "\n" << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(flat(r.output), Catch::Contains(c.says));
      CHECK_THAT(r.output, !Catch::Contains("step ") && !Catch::Contains("Results:"));
      CHECK(test::entries(results) == 0);
      CHECK(test::entries(results / ".running") == 0);
    }
  }
}

// A sweep's variable reaches every job: a drill for rank 1 of its 2-rank job
// must not stop its 1-rank baseline, which says that no drill happens in it.
TEST_CASE("a drill for a rank the job does not have is a warning, not a refusal") {
  test::TempDir dir;
  auto r = run_binary_env("HPCBENCH_INJECT='fault=5:1:kill'", kRun + " --dry-run --results-dir " + (dir.path / "r").string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(flat(r.output), Catch::Contains("fault=5:1:kill: rank 5 is not a rank of this job of 1, so no drill"));
}

TEST_CASE("a loop of links in --results-dir or TMPDIR is named as one, not an internal error") {
  test::TempDir dir;
  const auto loop = dir.path / "loop";
  fs::create_symlink(loop, loop);
  auto r = run_binary(kRun + " --dry-run --results-dir " + (loop / "results").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(flat(r.output), Catch::Contains("--results-dir " + (loop / "results").string() + ": cannot look at ") &&
                                 Catch::Contains("Too many levels of symbolic links"));
  CHECK_THAT(r.output, !Catch::Contains("File exists"));
  // With neither HOME nor XDG_CACHE_HOME, the feature cache's folder comes
  // from TMPDIR, which std::filesystem refused with an exception.
  r = run_binary_env("env -u HOME -u XDG_CACHE_HOME TMPDIR=" + (loop / "tmp").string(),
                     " run --strategy baseline --model bert-tiny --batch-size 4 --max-seq-length 64 --threads 1 "
                     "--max-steps 1 --train-data " + test::squad_file("dev-v1.1-sample.json") + " --vocab " +
                         test::vocab_file() + " --results-dir " + (dir.path / "r").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(flat(r.output), Catch::Contains("no folder for the feature cache") && Catch::Contains(loop.string()));
  CHECK_THAT(r.output, !Catch::Contains("internal error"));
}

// Issue 44: a stop signal while a run reads its checkpoint ends the run with
// the signal's status, before it claims a results folder. HPCBENCH_INJECT
// stop_read sends the signal before the file's first chunk: deterministic,
// where a signal from outside must be timed into the read.
TEST_CASE("a stop signal while --checkpoint is read ends the run with that signal's status, nothing written") {
  test::TempDir dir;
  const auto checkpoint = dir.path / "big.safetensors";
  {
    std::string header = R"({"w":{"dtype":"F32","shape":[4194304],"data_offsets":[0,16777216]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    const uint64_t len = header.size();
    std::ofstream out(checkpoint, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << header;
  }
  fs::resize_file(checkpoint, fs::file_size(checkpoint) + (uint64_t{16} << 20));
  const auto results = dir.path / "results";
  for (auto [sig, name, status] : {std::tuple{"USR1", "SIGUSR1", 128 + 10}, std::tuple{"TERM", "SIGTERM", 128 + 15}}) {
    auto r = run_binary_env(fmt::format("HPCBENCH_INJECT='stop_read=big.safetensors:{}'", sig),
                            kRun + " --max-steps 2 --checkpoint " + checkpoint.string() + " --results-dir " +
                                results.string());
    INFO(r.output);
    CHECK(r.exit_code == status);
    CHECK_THAT(flat(r.output), Catch::Contains(fmt::format("interrupted by {} while reading {}", name,
                                                           checkpoint.string())));
    CHECK_THAT(r.output, !Catch::Contains("step ") && !Catch::Contains("internal error"));
    CHECK(test::entries(results) == 0);
    CHECK(test::entries(results / ".running") == 0);
  }
}

// Issue 44: the built-in launcher picks its own address and port; one left
// in the environment is said to be unused, not silently ignored.
TEST_CASE("MASTER_ADDR and MASTER_PORT under --nproc-per-node are said to be unused, with what is used") {
  test::TempDir dir;
  auto r = run_binary_env("MASTER_ADDR=10.1.2.3 MASTER_PORT=29555",
                          kDryRun + " --strategy ddp --nproc-per-node 2 --results-dir " + (dir.path / "r").string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto out = flat(r.output);
  CHECK_THAT(out, Catch::Contains("MASTER_ADDR=10.1.2.3 is not used under --nproc-per-node 2"));
  CHECK_THAT(out, Catch::Contains("MASTER_PORT=29555 is not used under --nproc-per-node 2") &&
                      Catch::Contains("meet on 127.0.0.1 at a free port"));
  // Without them, nothing is said.
  r = run_binary_env("env -u MASTER_ADDR -u MASTER_PORT", kDryRun + " --strategy ddp --nproc-per-node 2 --results-dir " +
                                                              (dir.path / "r").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, !Catch::Contains("is not used under"));
}

// Issue 44: a number past its type's range is refused naming the flag and
// the value, not clamped to the largest int64 (CLI11's cast) nor read as
// infinity; the same for a setting's flag and a command's own.
TEST_CASE("numeric flags out of range are refused, naming the flag and the value, not clamped") {
  test::TempDir dir;
  const std::string big = "99999999999999999999";
  for (auto [args, flag, value] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {kDryRun + " --repeats " + big, "--repeats", big},
           {kDryRun + " --max-steps " + big, "--max-steps", big},
           {kDryRun + " --seed -" + big, "--seed", "-" + big},
           {kDryRun + " --connect-timeout 1e999", "--connect-timeout", "1e999"},
           {kDryRun + " --collective-timeout 1e999", "--collective-timeout", "1e999"},
           {kDryRun + " --lr 1e999", "--lr", "1e999"},
           {kDryRun + " --lr 1e-400", "--lr", "1e-400"},
           {" main --max-steps " + big, "--max-steps", big},
           {" plan --baseline x --system y --global-batch " + big, "--global-batch", big}}) {
    auto r = run_binary(args + " --results-dir " + (dir.path / "r").string());
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(flat(r.output), Catch::Contains(flag) && Catch::Contains(value) && Catch::Contains("out of range"));
    CHECK_THAT(r.output, !Catch::Contains("checks out"));
    CHECK(test::entries(dir.path / "r") == 0);
  }
}
