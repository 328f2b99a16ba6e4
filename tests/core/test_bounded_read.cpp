// Issue 44, class 1: the one reader every file goes through. Each refusal
// is compared with what the kernel says the path is (a character device, a
// FIFO, a loop of links), and a read that would wait (a FIFO's open) runs in
// a child with an alarm, so a reader that blocks fails the test instead of
// hanging it.
#include "test_catch.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/stop_signal.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs `f` in a child that SIGALRM kills after `seconds`: true when it
// returned (threw or not) before that, false when it was still waiting.
bool ends_within(unsigned seconds, const std::function<void()>& f) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    try {
      f();
    } catch (...) {
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status);
}

}  // namespace

TEST_CASE("the reader reads a regular file whole, up to its kind's limit") {
  test::TempDir dir;
  const auto f = dir.path / "f.txt";
  write_file_atomic(f, std::string(1000, 'x'));
  CHECK(read_file_bounded(f, 1000) == std::string(1000, 'x'));
  CHECK_THAT(refusal([&] { read_file_bounded(f, 999); }),
             Catch::Contains("1000 bytes large, more than the 999 bytes such a file can be"));
  CHECK_THAT(refusal([&] { read_file(f, 999); }), Catch::StartsWith("cannot read " + f.string() + ": "));
  write_file_atomic(f, "");
  CHECK(read_file_bounded(f, 10).empty());
}

TEST_CASE("the reader reads a /proc file, which says it holds 0 bytes") {
  struct stat st {};
  REQUIRE(::stat("/proc/self/status", &st) == 0);
  REQUIRE(st.st_size == 0);
  const auto text = read_file_bounded("/proc/self/status", file_limit::kProc);
  CHECK_THAT(text, Catch::Contains("Pid:\t" + std::to_string(::getpid())));
  CHECK_THAT(refusal([] { read_file_bounded("/proc/self/status", 10); }), Catch::Contains("grew past the 10 bytes"));
}

TEST_CASE("a link to /dev/zero is refused before a byte is read, not read as empty nor without end") {
  test::TempDir dir;
  const auto link = dir.path / "config.toml";
  fs::create_symlink("/dev/zero", link);
  CHECK_THAT(refusal([&] { read_file_bounded(link, file_limit::kCheckpoint); }),
             Catch::Contains("not a regular file (a character device, such as /dev/zero)"));
  CHECK_THAT(refusal([&] { open_regular_file(link, file_limit::kCheckpoint); }),
             Catch::Contains("not a regular file"));
  CHECK(read_file_or_empty(link, file_limit::kProc).empty());
  // A configuration: refused naming the flag, where it was read as an empty file.
  CHECK_THAT(refusal([&] { TomlFile t(link); }),
             Catch::Contains("--config " + link.string() + ": not a regular file"));
}

TEST_CASE("a FIFO is refused at once: the open never waits for a writer") {
  test::TempDir dir;
  const auto fifo = dir.path / "config.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ends_within(5, [&] { (void)read_file_bounded(fifo, file_limit::kConfig); }));
  CHECK(ends_within(5, [&] { TomlFile t(fifo); }));
  CHECK_THAT(refusal([&] { read_file_bounded(fifo, file_limit::kConfig); }),
             Catch::Contains("not a regular file (a FIFO)"));
}

TEST_CASE("a loop of links, a folder and a missing file are each named") {
  test::TempDir dir;
  fs::create_symlink(dir.path / "b", dir.path / "a");
  fs::create_symlink(dir.path / "a", dir.path / "b");
  CHECK_THAT(refusal([&] { read_file_bounded(dir.path / "a", 100); }), Catch::Contains("a loop of symbolic links"));
  CHECK_THAT(refusal([&] { read_file_bounded(dir.path, 100); }), Catch::Contains("a folder, not a file"));
  CHECK(refusal([&] { read_file_bounded(dir.path / "none", 100); }) == "no such file");
  CHECK_THAT(refusal([&] { TomlFile t(dir.path / "none"); }), Catch::Contains("no such file"));
}

TEST_CASE("a streamed file reads at offsets and says where it ends") {
  test::TempDir dir;
  const auto f = dir.path / "w.bin";
  write_file_atomic(f, "0123456789");
  ReadableFile in = open_regular_file(f, 100);
  CHECK(in.size() == 10);
  char buf[4] = {};
  REQUIRE(in.read_at(6, buf, 4));
  CHECK(std::string(buf, 4) == "6789");
  CHECK_FALSE(in.read_at(8, buf, 4));
}

namespace {

// What a read in a child says once a stop came (note_stop, as a signal's
// handler would set it) after `before_stop` and before `after_stop`: the
// stop is the child's, so the test process keeps running its other cases.
// "whole" when the read ran to its end, else the error's text.
std::string read_with_stop_in_child(const std::function<void()>& before_stop,
                                    const std::function<std::string()>& after_stop) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string said;
    try {
      before_stop();
      note_stop(SIGTERM);
      said = after_stop();
    } catch (const Interrupted& e) {
      said = fmt::format("Interrupted({}): {}", e.signal(), e.what());
    } catch (const std::exception& e) {
      said = std::string("other: ") + e.what();
    }
    (void)!::write(fds[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return said;
}

}  // namespace

TEST_CASE("a stop signal that comes while a file is read ends the read at its next chunk, naming the file") {
  test::TempDir dir;
  const auto f = dir.path / "big.bin";
  { std::ofstream(f) << "x"; }
  fs::resize_file(f, 20 * kMiB);  // three chunks of 8 MiB
  std::optional<ReadableFile> in;
  std::string buf(20 * kMiB, '\0');
  // Streamed (a checkpoint's tensors): opened, then the stop, then the read.
  CHECK(read_with_stop_in_child([&] { in.emplace(open_regular_file(f, file_limit::kCheckpoint)); },
                                [&] { return in->read_at(0, buf.data(), buf.size()) ? "whole" : "short"; }) ==
        fmt::format("Interrupted({}): interrupted by SIGTERM while reading {}; not read further", SIGTERM, f.string()));
  // A stop that came before the file was opened does not end its read: a
  // stopped run still reads what its results need.
  CHECK(read_with_stop_in_child([] {}, [&] { return std::to_string(read_file(f, file_limit::kDataset).size()); }) ==
        std::to_string(20 * kMiB));
  // Nor a file of one chunk, read in an instant (a /proc file in the
  // sampler's thread, where the exception would end the process).
  const auto small = dir.path / "small.txt";
  write_file_atomic(small, std::string(1000, 's'));
  CHECK(read_with_stop_in_child([&] { in.emplace(open_regular_file(small, file_limit::kConfig)); },
                                [&] { return in->read_at(0, buf.data(), 1000) ? "whole" : "short"; }) == "whole");
  // Nor while the results are written.
  CHECK(read_with_stop_in_child([&] { in.emplace(open_regular_file(f, file_limit::kCheckpoint)); },
                                [&] {
                                  ReadsRunToTheirEnd whole;
                                  return in->read_at(0, buf.data(), buf.size()) ? "whole" : "short";
                                }) == "whole");
}

TEST_CASE("slow_read delays each chunk of the file it names, and a malformed one is an error naming the variable") {
  test::TempDir dir;
  const auto f = dir.path / "data.json";
  write_file_atomic(f, "{}");
  ::setenv("HPCBENCH_INJECT", "slow_read=data.json", 1);
  CHECK_THAT(refusal([&] { read_file(f, 100); }), Catch::Contains("HPCBENCH_INJECT slow_read=data.json: expected"));
  ::setenv("HPCBENCH_INJECT", "slow_read=data.json:-5", 1);
  CHECK_THAT(refusal([&] { read_file(f, 100); }), Catch::Contains("slow_read=data.json:-5"));
  ::setenv("HPCBENCH_INJECT", "slow_read=other.json:100000", 1);
  CHECK(read_file(f, 100) == "{}");  // another file's delay is not this one's
  ::setenv("HPCBENCH_INJECT", "slow_read=data.json:0", 1);
  CHECK(read_file(f, 100) == "{}");
  ::unsetenv("HPCBENCH_INJECT");
}

TEST_CASE("stop_read sends the signal before the first chunk of the file it names; a malformed one is refused") {
  test::TempDir dir;
  const auto f = dir.path / "big.bin";
  { std::ofstream(f) << "x"; }
  fs::resize_file(f, 20 * kMiB);
  ::setenv("HPCBENCH_INJECT", "stop_read=big.bin:USR1", 1);
  // In a child with the run's handlers, which the signal must not kill.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    install_stop_handlers(false);
    std::string said;
    try {
      said = "whole: " + std::to_string(read_file(f, file_limit::kDataset).size());
    } catch (const Interrupted& e) {
      said = fmt::format("Interrupted({}): {}", e.signal(), e.what());
    }
    (void)!::write(fds[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  CHECK(said ==
        fmt::format("Interrupted({}): interrupted by SIGUSR1 while reading {}; not read further", SIGUSR1, f.string()));
  ::setenv("HPCBENCH_INJECT", "stop_read=big.bin:KILL", 1);
  CHECK_THAT(refusal([&] { read_file(f, file_limit::kDataset); }),
             Catch::Contains("HPCBENCH_INJECT stop_read=big.bin:KILL: expected <file name>:<TERM|INT|USR1>"));
  ::unsetenv("HPCBENCH_INJECT");
}
