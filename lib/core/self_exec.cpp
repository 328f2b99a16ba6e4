#include "core/bounded_read.h"
#include "core/self_exec.h"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/process.h"

namespace hpcbench {

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail("cannot find this program's path (/proc/self/exe): {}", ec.message());
  return p.string();
}

int run_self(const std::vector<std::string>& args) { return run_program(self_exe(), args); }

int run_program(const std::string& exe, const std::vector<std::string>& args, bool quiet) {
  Command cmd;
  cmd.program = exe;
  cmd.args = args;
  if (quiet) cmd.out = Sink::Null;
  return run(cmd);
}

int run_self_passing_stop(const std::vector<std::string>& args) {
  Command cmd;
  cmd.program = self_exe();
  cmd.args = args;
  cmd.env = {fmt::format("{}={}", kStopParentVariable, ::getpid())};
  cmd.stop_signals_blocked = true;
  return run_passing_stop(cmd);
}

std::vector<std::string> own_command_line() {
  std::string raw;
  try {
    raw = read_file("/proc/self/cmdline", file_limit::kProc);
  } catch (const Interrupted&) {
    throw;
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
