// The process runner (core/process.h): exit codes, signals, time limits,
// captured output, a program that is not there, and the stop signals it
// passes on or ends its child on.
#include "test_catch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "core/process.h"
#include "core/stop_signal.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

Command sh(const std::string& script) {
  Command c;
  c.program = "/bin/sh";
  c.args = {"-c", script};
  return c;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/hpcbench-test-process-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { remove_tree(path); }
};

// Runs `body` in a forked copy of this test and returns its exit status:
// the stop-signal state is process-wide, and must not leak into other tests.
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
    }
    ::_exit(rc);
  }
  return exit_code(wait_for(pid));
}

// Whether `pid` is gone (or a zombie nobody has reaped yet).
bool gone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return true;
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = all.rfind(')');
  return paren != std::string::npos && paren + 2 < all.size() && all[paren + 2] == 'Z';
}

}  // namespace

TEST_CASE("run returns the exit code, or 128 + the signal that killed the child") {
  CHECK(run(sh("exit 0")) == 0);
  CHECK(run(sh("exit 3")) == 3);
  CHECK(run(sh("kill -TERM $$")) == 128 + SIGTERM);
  CHECK(run(sh("kill -KILL $$")) == 128 + SIGKILL);
}

TEST_CASE("describe_exit says how a child ended") {
  CHECK(describe_exit(wait_for(start(sh("exit 2")).pid)) == "exited with status 2");
  CHECK_THAT(describe_exit(wait_for(start(sh("kill -KILL $$")).pid)), Catch::StartsWith("was killed by signal 9 ("));
}

TEST_CASE("a program that cannot start is an error naming it and why") {
  Command c;
  c.program = "/nonexistent/hpcbench-no-such-program";
  CHECK_THROWS_WITH(start(c), Catch::Contains("cannot start /nonexistent/hpcbench-no-such-program") &&
                                  Catch::Contains("No such file or directory"));
  auto out = run_captured(c, {});
  CHECK(out.status == -1);
  CHECK_THAT(out.error, Catch::Contains("No such file or directory"));
  // A folder that cannot be entered is the child's failure too, said here.
  Command in_missing = sh("true");
  in_missing.cwd = "/nonexistent/hpcbench-no-such-folder";
  CHECK_THROWS_WITH(start(in_missing), Catch::Contains("cannot enter /nonexistent/hpcbench-no-such-folder"));
}

TEST_CASE("run_captured keeps stdout and stderr in order, as bytes, up to its limit") {
  auto out = run_captured(shell_command("printf 'one\\n'; printf 'two\\n' >&2; printf '\\377three'; exit 4"), {});
  CHECK(out.status == 4);
  CHECK_FALSE(out.timed_out);
  CHECK(out.interrupted == 0);
  CHECK(out.text == "one\ntwo\n\xffthree");
  // stderr elsewhere: only stdout is captured.
  Command quiet = shell_command("echo said; echo hidden >&2");
  quiet.err = Sink::Null;
  CHECK(run_captured(quiet, {}).text == "said\n");
  // A program that prints without end is cut at the limit, and still waited for.
  auto cut = run_captured(shell_command("head -c 100000 /dev/zero; exit 0"), {.max_bytes = 1000});
  CHECK(cut.text.size() == 1000);
  CHECK(cut.status == 0);
  // The stdin of a shell command is /dev/null: a prompt reads end of file at once.
  CHECK(run_captured(shell_command("read x; echo \"[$x] $?\""), {.timeout_s = 20}).text == "[] 1\n");
}

TEST_CASE("run_captured kills a child past its time limit, with what it started") {
  TempDir dir;
  auto pid_file = dir.path / "grandchild";
  auto out = run_captured(shell_command("sleep 30 & echo $! > '" + pid_file.string() + "'; wait"),
                          {.timeout_s = 0.5});
  CHECK(out.timed_out);
  CHECK(out.status == -1);
  pid_t grandchild = std::stoi(read_file(pid_file));
  // SIGKILL to the group is immediate; reaping by whoever inherited it may lag.
  for (int i = 0; i < 100 && !gone(grandchild); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(gone(grandchild));
}

TEST_CASE("a child that exits while its own child holds the pipe is done at its exit") {
  auto out = run_captured(shell_command("echo first; sleep 3 &"), {.timeout_s = 20});
  CHECK_FALSE(out.timed_out);
  CHECK(out.status == 0);
  CHECK(out.text == "first\n");
}

TEST_CASE("the child gets the environment, folder and file it was given") {
  TempDir dir;
  Command c = sh("echo \"$HPCBENCH_PROCESS_TEST $(pwd)\"; echo err >&2");
  c.env = {"HPCBENCH_PROCESS_TEST=given", "PATH=/usr/bin:/bin"};
  c.cwd = dir.path;
  c.out = Sink::File;
  c.file = dir.path / "log";
  c.err = Sink::Stdout;
  REQUIRE(run(c) == 0);
  CHECK(read_file(dir.path / "log") == "given " + fs::canonical(dir.path).string() + "\nerr\n");
  // A variable the parent has is replaced, not doubled.
  ::setenv("HPCBENCH_PROCESS_TEST", "parent", 1);
  c.out = Sink::Pipe;
  CHECK(run_captured(c, {}).text.starts_with("given "));
  ::unsetenv("HPCBENCH_PROCESS_TEST");
}

TEST_CASE("find_program looks on PATH unless the name holds a '/'") {
  CHECK(find_program("sh").ends_with("/sh"));
  CHECK(find_program("/bin/sh") == "/bin/sh");
  CHECK(find_program("hpcbench-no-such-program").empty());
  CHECK(find_program("/nonexistent/sh").empty());
}

TEST_CASE("run_captured ends its child on SIGTERM to this process, and says so") {
  int rc = in_child([] {
    std::thread sender([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(::getpid(), SIGTERM);
    });
    auto out = run_captured(shell_command("sleep 30"), {.timeout_s = 60});
    sender.join();
    return out.interrupted == SIGTERM && !out.timed_out && out.status == -1 ? 0 : 1;
  });
  CHECK(rc == 0);
}

TEST_CASE("run_passing_stop passes the first stop signal on to the child") {
  int rc = in_child([] {
    install_stop_handlers(false);
    std::thread sender([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(::getpid(), SIGUSR1);
    });
    // The shell ends with 7 only when the signal reaches it.
    int status = run_passing_stop(sh("trap 'kill $p; exit 7' USR1; sleep 30 & p=$!; wait"));
    sender.join();
    return status;
  });
  CHECK(rc == 7);
}

TEST_CASE("a child started with the stop signals blocked does not die of one sent early") {
  Command c = sh("kill -TERM $$; echo alive");
  c.stop_signals_blocked = true;
  c.out = Sink::Pipe;
  auto out = run_captured(c, {.timeout_s = 20, .stop_on_signal = false});
  CHECK(out.text == "alive\n");
  CHECK(out.status == 0);
}
