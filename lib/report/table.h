#pragma once
// A table of formatted cells and its renderings: aligned fixed-width text
// for terminals (titles, then units, in the manner of nccl-tests and
// hyperfine), GitHub Markdown and RFC 4180 CSV. What goes in the cells is
// decided by the builders (report_tables.h); this file only lays them out.
#include <string>
#include <vector>

namespace hpcbench::report {

struct TableColumn {
  std::string title;
  std::string unit;      // "" when unitless
  bool numeric = false;  // right-aligned
};

struct Table {
  std::vector<TableColumn> columns;
  std::vector<std::vector<std::string>> rows;
};

// Two header lines (titles; units in brackets) and one line per row,
// columns separated by two spaces, no trailing blanks.
std::string render_terminal(const Table& t);
// As above, at most `max_width` columns wide where it can be: the text
// columns' longest cells (names, causes) are shortened, ending in "...",
// widest column first, down to their titles' width.
std::string render_terminal(Table t, size_t max_width);
// Units in parentheses after the title; numeric columns right-aligned.
std::string render_markdown(const Table& t);
// The titles as the header (units are left to the column names).
std::string render_csv(const Table& t);

}  // namespace hpcbench::report
