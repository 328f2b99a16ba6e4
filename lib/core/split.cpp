#include "core/split.h"

namespace hpcbench {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace hpcbench
