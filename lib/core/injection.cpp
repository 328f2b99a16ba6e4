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
#include "core/printable.h"
#include "core/split.h"

namespace hpcbench {

namespace {

const std::vector<std::string_view> kKeys = {"fault",   "slow_rank",       "abort_throws", "memory_bytes",
                                             "bus_ids", "rename_delay_ms", "slow_read",
                                             "stop_read"};  // stop_read: core/bounded_read.cpp
const std::vector<std::string> kFaultModes = {"kill", "abort", "exit", "hang", "stop", "term"};

// The longest wait a drill may ask for: ten minutes, so that a value written
// wrong (99999999999) is refused instead of hanging the run.
constexpr uint64_t kMaxDelayMs = 600000;
// Ranks and step counts beyond any job.
constexpr uint64_t kMaxRank = 1000000;
constexpr uint64_t kMaxAfter = 1000000000000;

std::string shown() { return printable(std::getenv(kInjectVariable), 256); }

// Decimal digits only, at most `max`: "abc", "-5", "1e30", "0x1" or " 7" is
// a drill written wrong, which must not pass for a drill that ran (nor reach
// a cast or a scanf whose result the language leaves undefined).
std::optional<uint64_t> whole_number(std::string_view text, uint64_t max) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v > max) return std::nullopt;
  return v;
}

// "<a>:<b>" split at its last colon (a file name may hold colons).
std::optional<std::pair<std::string_view, std::string_view>> two_parts(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return std::pair{text.substr(0, colon), text.substr(colon + 1)};
}

// Each key's value against its form; "" when it holds, else the form.
std::string wrong_form(std::string_view key, std::string_view value) {
  if (key == "fault") {
    auto parts = split(std::string(value), ':');
    const bool ok = parts.size() == 3 && whole_number(parts[0], kMaxRank) && whole_number(parts[1], kMaxAfter) &&
                    std::find(kFaultModes.begin(), kFaultModes.end(), parts[2]) != kFaultModes.end();
    return ok ? "" : fmt::format("<rank>:<after>:<{}>, rank and after whole numbers", fmt::join(kFaultModes, "|"));
  }
  if (key == "slow_rank") {
    auto p = two_parts(value);
    return p && whole_number(p->first, kMaxRank) && whole_number(p->second, kMaxDelayMs)
               ? ""
               : fmt::format("<rank>:<ms>, whole numbers, ms at most {}", kMaxDelayMs);
  }
  if (key == "slow_read") {
    auto p = two_parts(value);
    return p && !p->first.empty() && whole_number(p->second, kMaxDelayMs)
               ? ""
               : fmt::format("<file name>:<ms>, ms a whole number from 0 to {}", kMaxDelayMs);
  }
  if (key == "stop_read") {
    auto p = two_parts(value);
    return p && !p->first.empty() && (p->second == "TERM" || p->second == "INT" || p->second == "USR1")
               ? ""
               : "<file name>:<TERM|INT|USR1>";
  }
  if (key == "abort_throws") return value == "1" ? "" : "1";
  if (key == "memory_bytes")
    return whole_number(value, uint64_t{1} << 62) ? "" : "a whole number of bytes from 0 to 2^62";
  if (key == "rename_delay_ms")
    return whole_number(value, kMaxDelayMs) ? "" : fmt::format("a whole number from 0 to {}", kMaxDelayMs);
  if (key == "bus_ids") {
    for (auto& id : split(std::string(value), ','))
      if (id.empty()) return "<id>,<id>,... with no empty id";
    return value.empty() ? "<id>,<id>,..." : "";
  }
  return "";
}

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
      fail("{}='{}': '{}' is not <key>=<value> with a key among {}", kInjectVariable, shown(), printable(item, 256),
           fmt::join(kKeys, ", "));
    if (name == key && found)
      fail("{}='{}': {} is given twice; a drill takes one of each", kInjectVariable, shown(), key);
    if (name == key) found = item.substr(eq + 1);
  }
  return found;
}

std::string check_injection(int world_size) {
  std::string note;
  for (std::string_view key : kKeys) {
    auto value = injected(key);
    if (!value) continue;
    if (auto form = wrong_form(key, *value); !form.empty())
      fail("{} {}={}: expected {}", kInjectVariable, key, printable(*value, 256), form);
    if (world_size <= 0 || (key != "fault" && key != "slow_rank")) continue;
    const auto rank = whole_number(split(*value, ':').front(), kMaxRank);
    if (*rank >= static_cast<uint64_t>(world_size) && note.empty())
      note = fmt::format("{} {}={}: rank {} is not a rank of this job of {}, so no drill happens in this job",
                         kInjectVariable, key, *value, *rank, world_size);
  }
  return note;
}

std::optional<uint64_t> injected_number(std::string_view key, uint64_t max) {
  auto text = injected(key);
  if (!text) return std::nullopt;
  auto v = whole_number(*text, max);
  if (!v) fail("{} {}={}: expected a whole number from 0 to {}", kInjectVariable, key, printable(*text, 256), max);
  return v;
}

std::optional<uint64_t> injected_read_delay_ms(const std::string& file_name) {
  // Only a drill sets the variable: a run without one never parses it here.
  const char* text = std::getenv(kInjectVariable);
  if (!text || !*text) return std::nullopt;
  auto spec = injected("slow_read");
  if (!spec) return std::nullopt;
  if (auto form = wrong_form("slow_read", *spec); !form.empty())
    fail("{} slow_read={}: expected {}", kInjectVariable, printable(*spec, 256), form);
  auto [name, ms] = *two_parts(*spec);
  if (name != file_name) return std::nullopt;
  return whole_number(ms, kMaxDelayMs);
}

std::optional<InjectedRankDelay> injected_slow_rank() {
  auto spec = injected("slow_rank");
  if (!spec) return std::nullopt;
  if (auto form = wrong_form("slow_rank", *spec); !form.empty())
    fail("{} slow_rank={}: expected {}", kInjectVariable, printable(*spec, 256), form);
  auto [rank, ms] = *two_parts(*spec);
  return InjectedRankDelay{static_cast<int>(*whole_number(rank, kMaxRank)), *whole_number(ms, kMaxDelayMs)};
}

std::optional<InjectedFault> injected_fault(const std::vector<std::string>& modes) {
  auto spec = injected("fault");
  if (!spec) return std::nullopt;
  auto parts = split(*spec, ':');
  auto rank = parts.size() == 3 ? whole_number(parts[0], kMaxRank) : std::nullopt;
  auto after = parts.size() == 3 ? whole_number(parts[1], kMaxAfter) : std::nullopt;
  if (!rank || !after || std::find(modes.begin(), modes.end(), parts[2]) == modes.end())
    fail("{} fault={}: expected <rank>:<after>:<{}>, rank and after whole numbers", kInjectVariable,
         printable(*spec, 256), fmt::join(modes, "|"));
  return InjectedFault{static_cast<int>(*rank), static_cast<long>(*after), parts[2]};
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
