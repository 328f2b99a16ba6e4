#include "core/printable.h"

#include <fmt/format.h>

namespace hpcbench {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (overlong forms,
// surrogates and code points past U+10FFFF are not valid).
size_t utf8_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogate
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // past U+10FFFF
  return n;
}

}  // namespace

std::string printable(std::string_view bytes, size_t max_bytes) {
  std::string_view s = bytes.substr(0, std::min(bytes.size(), max_bytes));
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_length(s, i);
    bool control = n == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F);
    if (n == 0 || control) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  if (bytes.size() > s.size()) out += fmt::format(" ... ({} more bytes)", bytes.size() - s.size());
  return out;
}

}  // namespace hpcbench
