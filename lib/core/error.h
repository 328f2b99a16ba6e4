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

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace hpcbench
