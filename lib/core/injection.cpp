#include "core/injection.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/split.h"

namespace hpcbench {

namespace {

const std::vector<std::string_view> kKeys = {"fault",   "slow_rank", "abort_throws", "memory_bytes",
                                             "bus_ids", "rename_delay_ms"};

}  // namespace

std::optional<std::string> injected(std::string_view key) {
  const char* text = std::getenv(kInjectVariable);
  if (!text || !*text) return std::nullopt;
  std::optional<std::string> found;
  for (auto& item : split(text, ';')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string_view name = std::string_view(item).substr(0, eq);
    if (eq == std::string::npos || std::find(kKeys.begin(), kKeys.end(), name) == kKeys.end())
      fail("{}='{}': '{}' is not <key>=<value> with a key among {}", kInjectVariable, text, item,
           fmt::join(kKeys, ", "));
    if (name == key) found = item.substr(eq + 1);
  }
  return found;
}

std::optional<uint64_t> injected_number(std::string_view key, uint64_t max) {
  auto text = injected(key);
  if (!text) return std::nullopt;
  // Digits only, parsed with a range check: "abc", "-5", "1e30" or " 7" is
  // a drill written wrong, which must not pass for a drill that ran (nor
  // reach a cast whose result the language leaves undefined).
  uint64_t v = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (text->empty() || ec != std::errc() || ptr != end || v > max)
    fail("{} {}={}: expected a whole number from 0 to {}", kInjectVariable, key, *text, max);
  return v;
}

std::optional<InjectedFault> injected_fault(const std::vector<std::string>& modes) {
  auto spec = injected("fault");
  if (!spec) return std::nullopt;
  InjectedFault f;
  char mode[16] = {0};
  if (std::sscanf(spec->c_str(), "%d:%ld:%15s", &f.rank, &f.after, mode) != 3 ||
      std::find(modes.begin(), modes.end(), mode) == modes.end())
    fail("{} fault={}: expected <rank>:<after>:<{}>", kInjectVariable, *spec, fmt::join(modes, "|"));
  f.mode = mode;
  return f;
}

void carry_out(const InjectedFault& f, const char* unit) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s fault: rank %d goes '%s' after %ld %s\n", kInjectVariable, f.rank, f.mode.c_str(), f.after,
               unit);
  std::fflush(stderr);
  if (f.mode == "term") {
    ::kill(::getpid(), SIGTERM);
    return;
  }
  if (f.mode == "stop") ::raise(SIGSTOP);
  if (f.mode == "kill") ::kill(::getpid(), SIGKILL);
  if (f.mode == "abort") std::abort();
  if (f.mode == "exit") std::_Exit(3);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace hpcbench
