#include "test_catch.h"

#include <sstream>

#include "core/text_wrap.h"

using namespace hpcbench;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The words of a text, in order: wrapping only moves line breaks.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("wrap_text: every line within the width, the words kept in order") {
  std::string text = "[2026-11-26 23:55:31] [warning] ";
  for (int i = 0; i < 40; ++i) text += "word" + std::to_string(i) + " ";
  text += "end\nshort line\n";
  auto wrapped = wrap_text(text, 60, 4);
  for (auto& l : lines_of(wrapped)) CHECK(text_columns(l) <= 60);
  CHECK(words_of(wrapped) == words_of(text));
  auto lines = lines_of(wrapped);
  REQUIRE(lines.size() > 3);
  CHECK(lines[1].rfind("    word", 0) == 0);  // continuation lines indented
  CHECK(lines.back() == "short line");        // lines that fit are left alone
  CHECK(wrapped.back() == '\n');
}

TEST_CASE("wrap_text: UTF-8 symbols are one column; a word wider than a line is cut") {
  std::string step = "  Step time (median … p90 … max):    12.00 ms …    13.00 ms …    14.00 ms   (σ 0.50 ms, 15 steps)";
  CHECK(text_columns("…σ") == 2);
  CHECK(wrap_text(step, 120) == step);  // 104 columns, more bytes
  std::string path(250, 'x');
  auto lines = lines_of(wrap_text("  Results: " + path, 120, 4));
  REQUIRE(lines.size() == 3);
  for (auto& l : lines) CHECK(text_columns(l) <= 120);
  std::string joined;
  for (auto& l : lines) joined += l.substr(l.find_first_not_of(' '));
  CHECK(joined == "Results: " + path);  // the break fell inside the path, not at its space
}
