#include "distributed/hostlist.h"

#include <cctype>

#include "core/error.h"
#include "core/process.h"
#include "core/split.h"

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
  const auto items = split(group);
  for (std::string_view item : items) {
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
  // Only the characters host lists are made of go to scontrol.
  bool safe = !list.empty();
  for (char c : list)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ',' || c == '[' || c == ']'))
      safe = false;
  if (std::string scontrol = find_program("scontrol"); safe && !scontrol.empty()) {
    Command cmd;
    cmd.program = scontrol;
    cmd.name = "scontrol";
    cmd.args = {"show", "hostnames", std::string(list)};
    cmd.err = Sink::Null;
    // As long as it takes (no time limit, no stop on a signal): the host
    // list is needed before anything else can happen.
    auto out = run_captured(cmd, {.stop_on_signal = false, .max_bytes = size_t{1} << 30});
    std::vector<std::string> hosts;
    for (auto& line : split(out.text, '\n'))
      if (!line.empty()) hosts.push_back(line);
    if (out.status == 0 && !hosts.empty()) return hosts;
  }
  return expand_hostlist(list);
}

}  // namespace hpcbench::dist
