#include "sweep/slurm_time.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/error.h"

namespace hpcbench::sweep {

namespace {

[[noreturn]] void bad_time(const std::string& text) {
  fail("--time {}: not a SLURM time (minutes, minutes:seconds, hours:minutes:seconds, days-hours, "
       "days-hours:minutes or days-hours:minutes:seconds)", text);
}

std::vector<int64_t> numbers(const std::string& text, const std::string& part, char sep) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    size_t end = part.find(sep, start);
    std::string item = part.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (item.empty() || item.size() > 9 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }))
      bad_time(text);
    out.push_back(std::stoll(item));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<int64_t> parse_slurm_time(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::string upper = text;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "UNLIMITED" || upper == "INFINITE") return std::nullopt;
  int64_t seconds = 0;
  if (auto dash = text.find('-'); dash != std::string::npos) {
    auto days = numbers(text, text.substr(0, dash), ':');
    auto rest = numbers(text, text.substr(dash + 1), ':');
    if (days.size() != 1 || rest.size() > 3) bad_time(text);
    seconds = days[0] * 86400 + rest[0] * 3600 + (rest.size() > 1 ? rest[1] * 60 : 0) + (rest.size() > 2 ? rest[2] : 0);
  } else {
    auto p = numbers(text, text, ':');
    if (p.size() == 1) seconds = p[0] * 60;
    else if (p.size() == 2) seconds = p[0] * 60 + p[1];
    else if (p.size() == 3) seconds = p[0] * 3600 + p[1] * 60 + p[2];
    else bad_time(text);
  }
  if (seconds == 0) return std::nullopt;  // SLURM: zero asks for no limit
  return seconds;
}

int64_t stop_signal_margin_s(const std::string& time) {
  auto limit = parse_slurm_time(time);
  return limit ? std::clamp<int64_t>(*limit / 4, 1, 120) : 120;
}

}  // namespace hpcbench::sweep
