#include "report/table.h"

#include "results/csv.h"

#include <algorithm>

#include <fmt/format.h>

namespace hpcbench::report {

namespace {

void rstrip(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

std::string pad(const std::string& s, size_t width, bool right) {
  // Cells are ASCII, so bytes are columns.
  std::string fill(width > s.size() ? width - s.size() : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string render_terminal(const Table& t) {
  size_t n = t.columns.size();
  std::vector<size_t> width(n);
  for (size_t i = 0; i < n; ++i) {
    width[i] = std::max(t.columns[i].title.size(), t.columns[i].unit.empty() ? 0 : t.columns[i].unit.size() + 2);
    for (auto& r : t.rows) width[i] = std::max(width[i], r.at(i).size());
  }
  bool any_unit = std::any_of(t.columns.begin(), t.columns.end(), [](auto& c) { return !c.unit.empty(); });
  std::string out;
  auto line = [&](auto cell) {
    std::string l;
    for (size_t i = 0; i < n; ++i) {
      if (i) l += "  ";
      l += pad(cell(i), width[i], t.columns[i].numeric);
    }
    rstrip(l);
    out += l + "\n";
  };
  line([&](size_t i) { return t.columns[i].title; });
  if (any_unit) line([&](size_t i) { return t.columns[i].unit.empty() ? "" : "[" + t.columns[i].unit + "]"; });
  for (auto& r : t.rows) line([&](size_t i) { return r[i]; });
  return out;
}

std::string render_terminal(Table t, size_t max_width) {
  const size_t n = t.columns.size();
  auto widths = [&] {
    std::vector<size_t> w(n);
    for (size_t i = 0; i < n; ++i) {
      w[i] = std::max(t.columns[i].title.size(), t.columns[i].unit.empty() ? 0 : t.columns[i].unit.size() + 2);
      for (auto& r : t.rows) w[i] = std::max(w[i], r.at(i).size());
    }
    return w;
  };
  while (n > 0) {
    auto w = widths();
    size_t total = 2 * (n - 1);
    for (size_t x : w) total += x;
    if (total <= max_width) break;
    // The widest text column that can still give way.
    auto floor_of = [&](size_t i) {
      auto& c = t.columns[i];
      return std::max({c.title.size(), c.unit.empty() ? 0 : c.unit.size() + 2, size_t{8}});
    };
    size_t pick = n;
    for (size_t i = 0; i < n; ++i)
      if (!t.columns[i].numeric && w[i] > floor_of(i) && (pick == n || w[i] > w[pick])) pick = i;
    if (pick == n) break;
    const size_t floor = floor_of(pick);
    const size_t target = std::max(floor, w[pick] - std::min(w[pick], total - max_width));
    for (auto& r : t.rows)
      if (r[pick].size() > target) r[pick] = r[pick].substr(0, target - 3) + "...";
  }
  return render_terminal(t);
}

std::string render_markdown(const Table& t) {
  std::string head = "|", rule = "|";
  for (auto& c : t.columns) {
    head += fmt::format(" {} |", markdown_cell(c.unit.empty() ? c.title : fmt::format("{} ({})", c.title, c.unit)));
    rule += c.numeric ? " ---: |" : " --- |";
  }
  std::string out = head + "\n" + rule + "\n";
  for (auto& r : t.rows) {
    out += "|";
    for (auto& cell : r) out += fmt::format(" {} |", markdown_cell(cell));
    out += "\n";
  }
  return out;
}

std::string render_csv(const Table& t) {
  std::string out;
  auto record = [&](size_t n, auto cell) {
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      out += results::csv_field(cell(i));
    }
    out += '\n';
  };
  record(t.columns.size(), [&](size_t i) { return t.columns[i].title; });
  for (auto& r : t.rows) record(r.size(), [&](size_t i) { return r[i]; });
  return out;
}

}  // namespace hpcbench::report
