#include "core/self_exec.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/stop_signal.h"

extern char** environ;

namespace hpcbench {

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail("cannot find this program's path (/proc/self/exe): {}", ec.message());
  return p.string();
}

int run_self(const std::vector<std::string>& args) { return run_program(self_exe(), args); }

int run_program(const std::string& exe, const std::vector<std::string>& args, bool quiet) {
  std::vector<std::string> all{exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail("cannot start {}: {}", all[0], std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_self_passing_stop(const std::vector<std::string>& args) {
  std::vector<std::string> all{self_exe()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with(std::string(kStopParentVariable) + "=")) env_strings.emplace_back(*e);
  env_strings.push_back(fmt::format("{}={}", kStopParentVariable, ::getpid()));
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  ::sigprocmask(SIG_SETMASK, nullptr, &mask);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&mask, sig);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) fail("cannot start {}: {}", all[0], std::strerror(rc));
  int passed = 0, status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) fail("cannot wait for {}: {}", all[0], std::strerror(errno));
    if (int n = stop_signal_count(); n > passed) {
      ::kill(pid, passed == 0 ? stop_signal() : SIGKILL);
      passed = n;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> own_command_line() {
  std::string raw;
  try {
    raw = read_file("/proc/self/cmdline");
  } catch (const std::exception&) {
    return {};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < raw.size();) {
    size_t end = raw.find('\0', i);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

std::vector<std::string> own_arguments() {
  auto all = own_command_line();
  if (!all.empty()) all.erase(all.begin());
  return all;
}

std::vector<std::string> strip_flag(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;  // and its value
      continue;
    }
    if (args[i].starts_with(flag + "=")) continue;
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace hpcbench
