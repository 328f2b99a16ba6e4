#include "core/text_wrap.h"

#include <spdlog/pattern_formatter.h>

#include <cstdlib>
#include <limits>

namespace hpcbench {

namespace {

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte offset where `width` columns of `s` end (s.size() when it fits).
size_t byte_at_column(std::string_view s, size_t width) {
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (continuation_byte(s[i])) continue;
    if (cols == width) return i;
    ++cols;
  }
  return s.size();
}

void wrap_line(std::string_view line, size_t width, size_t indent, std::string& out) {
  const std::string pad(indent, ' ');
  bool first = true;
  while (true) {
    const size_t room = first ? width : width - indent;
    if (text_columns(line) <= room) {
      if (!first) out += pad;
      out += line;
      return;
    }
    size_t end = byte_at_column(line, room);
    // Break at the last space that fits (the space itself is dropped),
    // unless that would leave the line nearly empty: then cut the word.
    size_t space = line.rfind(' ', end);
    size_t cut = space != std::string_view::npos && space > room / 4 ? space : end;
    std::string_view head = line.substr(0, cut);
    while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
    if (!first) out += pad;
    out += head;
    out += '\n';
    line.remove_prefix(cut);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    first = false;
    if (line.empty()) return;
  }
}

class WrappingFormatter final : public spdlog::formatter {
 public:
  WrappingFormatter(std::string pattern, size_t width)
      : pattern_(std::move(pattern)), width_(width), inner_(std::make_unique<spdlog::pattern_formatter>(pattern_)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    spdlog::memory_buf_t line;
    inner_->format(msg, line);
    // The colour range (the level's name) lies in the line's head, which
    // wrapping leaves where it is.
    std::string wrapped = wrap_text(std::string_view(line.data(), line.size()), width_);
    dest.append(wrapped.data(), wrapped.data() + wrapped.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<WrappingFormatter>(pattern_, width_);
  }

 private:
  std::string pattern_;
  size_t width_;
  std::unique_ptr<spdlog::pattern_formatter> inner_;
};

}  // namespace

size_t output_columns() {
  size_t width = kTerminalColumns;
  if (const char* c = std::getenv("HPCBENCH_COLUMNS"); c && *c) {
    char* end = nullptr;
    long v = std::strtol(c, &end, 10);
    if (end && *end == '\0' && v == 0) return std::numeric_limits<size_t>::max() / 2;
    // Narrower than 40 columns is not a terminal anyone reads a table on.
    if (end && *end == '\0' && v >= 40) width = static_cast<size_t>(v);
  }
  const char* launcher = std::getenv("HPCBENCH_LAUNCHER_PID");
  const char* rank = std::getenv("RANK");
  if (!launcher || !*launcher || !rank || !*rank) return width;
  return width - (std::string_view("[rank ] ").size() + std::string_view(rank).size());
}

size_t text_columns(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += !continuation_byte(c);
  return n;
}

std::string wrap_text(std::string_view text, size_t width, size_t indent) {
  if (width <= indent + 8) indent = 0;
  std::string out;
  out.reserve(text.size() + text.size() / width * (indent + 1));
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    wrap_line(line, width, indent, out);
    if (nl == std::string_view::npos) break;
    out += '\n';
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::unique_ptr<spdlog::formatter> wrapping_log_formatter(const std::string& pattern, size_t width) {
  return std::make_unique<WrappingFormatter>(pattern, width);
}

}  // namespace hpcbench
