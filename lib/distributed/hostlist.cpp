#include "distributed/hostlist.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "core/error.h"

namespace hpcbench::dist {

namespace {

// Far beyond any real allocation; stops "n[1-999999999]" from eating memory.
constexpr size_t kMaxHosts = 1'000'000;

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// One bracket group's contents ("001-003,007") as the strings it stands for.
std::vector<std::string> expand_group(std::string_view group, std::string_view list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= group.size()) {
    size_t comma = group.find(',', pos);
    if (comma == std::string_view::npos) comma = group.size();
    std::string_view item = group.substr(pos, comma - pos);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!is_digits(lo) || !is_digits(hi))
      fail("host list '{}': '[{}]' holds '{}', which is neither a number nor a range lo-hi", list,
           group, item);
    if (lo.size() > 18 || hi.size() > 18) fail("host list '{}': number '{}' is too long", list, item);
    unsigned long long a = std::stoull(std::string(lo)), b = std::stoull(std::string(hi));
    if (a > b) fail("host list '{}': range '{}' runs backwards", list, item);
    if (b - a >= kMaxHosts) fail("host list '{}': range '{}' is too large", list, item);
    // SLURM pads to the width of the lower bound when it has leading zeros.
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (unsigned long long v = a; v <= b; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      out.push_back(std::move(s));
    }
    pos = comma + 1;
  }
  return out;
}

// One top-level item ("gpu-[001-003]x" or "plainname").
void expand_item(std::string_view item, std::string_view list, std::vector<std::string>& out) {
  std::vector<std::string> partial{""};
  size_t pos = 0;
  while (pos < item.size()) {
    size_t open = item.find('[', pos);
    std::string_view text = item.substr(pos, open == std::string_view::npos ? open : open - pos);
    if (text.find(']') != std::string_view::npos) fail("host list '{}': unbalanced ']'", list);
    for (auto& p : partial) p += text;
    if (open == std::string_view::npos) break;
    size_t close = item.find(']', open);
    if (close == std::string_view::npos) fail("host list '{}': '[' without ']'", list);
    std::string_view group = item.substr(open + 1, close - open - 1);
    if (group.find('[') != std::string_view::npos) fail("host list '{}': nested '['", list);
    if (group.empty()) fail("host list '{}': empty '[]'", list);
    auto values = expand_group(group, list);
    if (partial.size() * values.size() > kMaxHosts) fail("host list '{}' names too many hosts", list);
    std::vector<std::string> next;
    next.reserve(partial.size() * values.size());
    for (auto& p : partial)
      for (auto& v : values) next.push_back(p + v);
    partial = std::move(next);
    pos = close + 1;
  }
  for (auto& p : partial) out.push_back(std::move(p));
}

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string_view rest(path);
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (!dir.empty() && ::access((std::filesystem::path(dir) / program).c_str(), X_OK) == 0) return true;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return false;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) fail("host list '{}': unbalanced ']'", list);
    if (c == ' ' || c == '\t' || c == '\n') fail("host list '{}' contains white space", list);
    if (c == ',' && depth == 0) {
      std::string_view item = list.substr(start, i - start);
      if (item.empty()) fail("host list '{}' has an empty entry", list);
      expand_item(item, list, out);
      if (out.size() > kMaxHosts) fail("host list '{}' names too many hosts", list);
      start = i + 1;
    }
  }
  if (depth != 0) fail("host list '{}': '[' without ']'", list);
  return out;
}

std::vector<std::string> resolve_hostlist(std::string_view list) {
  // Only the characters host lists are made of go to the shell.
  bool safe = !list.empty();
  for (char c : list)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ',' || c == '[' || c == ']'))
      safe = false;
  if (safe && on_path("scontrol")) {
    std::string cmd = "scontrol show hostnames '" + std::string(list) + "' 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
    if (pipe) {
      std::vector<std::string> hosts;
      std::string line;
      char buf[512];
      while (std::fgets(buf, sizeof buf, pipe.get())) {
        line += buf;
        if (!line.empty() && line.back() == '\n') {
          line.pop_back();
          if (!line.empty()) hosts.push_back(line);
          line.clear();
        }
      }
      if (!line.empty()) hosts.push_back(line);
      int status = ::pclose(pipe.release());
      if (status == 0 && !hosts.empty()) return hosts;
    }
  }
  return expand_hostlist(list);
}

}  // namespace hpcbench::dist
