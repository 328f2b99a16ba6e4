#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace hpcbench {

// An error the user can act on: bad input, a bad flag, a missing file.
// The CLI prints its message alone (no stack trace) and exits with code 2;
// anything else that escapes is an internal error (exit 1).
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A wait ended by SIGTERM, SIGINT or SIGUSR1 (core/stop_signal.h): the CLI
// prints its message and exits with 128 + the signal, as a shell reports a
// process that signal ended.
class Interrupted : public UserError {
 public:
  Interrupted(int sig, const std::string& message) : UserError(message), signal_(sig) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hpcbench
