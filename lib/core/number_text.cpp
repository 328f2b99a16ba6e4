#include "core/number_text.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace hpcbench {

namespace {

template <typename T>
std::string integer_problem(const std::string& s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && p == s.data() + s.size())
    return fmt::format("out of range: a whole number from {} to {}", std::numeric_limits<T>::min(),
                       std::numeric_limits<T>::max());
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return "expected an integer";
  return "";
}

std::string float_problem(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return "expected a number";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return "expected a number";
  if (errno == ERANGE && v != 0) return "out of range: a finite number of at most 1.7e308";
  if (errno == ERANGE) return "out of range: too close to 0 for a double (below 2.2e-308)";
  if (!std::isfinite(v)) return "expected a finite number";
  return "";
}

}  // namespace

std::string number_problem(const std::string& text, const std::string& type) {
  if (type == "INT") return integer_problem<int64_t>(text);
  if (type == "UINT") return integer_problem<uint64_t>(text);
  if (type == "FLOAT") return float_problem(text);
  return "";
}

}  // namespace hpcbench
