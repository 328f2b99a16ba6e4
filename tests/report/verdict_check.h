#pragma once
// Lines that call a pair significant at 5 % while printing a p-value above
// 0.05, or the reverse, in any text the report writes (terminal, report.md,
// the TensorBoard text) and in report.csv's verdict columns. A verdict line
// must carry the p-value of the test that decided it; a line saying
// "significant" with no p-value is a contradiction too.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace hpcbench::test {

inline std::vector<std::string> verdict_contradictions(const std::string& text) {
  // "p" as a word: a row named "dp" is followed by " = 1.5x" too.
  static const std::regex p_re(R"(\bp (=|<) ([0-9.eE+-]+))");
  std::vector<std::string> bad;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    bool negative = line.find("not significant") != std::string::npos;
    bool positive = !negative && line.find("significant at 5 %") != std::string::npos;
    // The terminal's short form: "2 devices: a > b, 1.2x [...], Welch's t-test p = ...".
    bool ranked = line.find("significance: ") != std::string::npos && line.find(" > ") != std::string::npos &&
                  line.find("ranking") == std::string::npos;
    std::smatch m;
    bool has_p = std::regex_search(line, m, p_re);
    if (line.find("Mann-Whitney") != std::string::npos) bad.push_back("another test's p-value: " + line);
    if (line.find("p = <") != std::string::npos) bad.push_back("two relations before a p-value: " + line);
    if (!has_p) {
      if (positive || ranked) bad.push_back("significant without a p-value: " + line);
      continue;
    }
    double p = std::stod(m[2].str());
    bool below = m[1].str() == "<" || p < 0.05;
    if ((positive || ranked) && !below) bad.push_back("significant with p >= 0.05: " + line);
    if (negative && below) bad.push_back("not significant with p < 0.05: " + line);
  }
  return bad;
}

// report.csv: speedup_p against speedup_verdict on every row.
inline std::vector<std::string> csv_verdict_contradictions(const std::string& csv) {
  std::vector<std::string> bad;
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(cell), cell.clear();
      else cell += c;
    }
    cells.push_back(cell);
    return cells;
  };
  auto names = split(header);
  long p_col = -1, v_col = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "speedup_p") p_col = static_cast<long>(i);
    if (names[i] == "speedup_verdict") v_col = static_cast<long>(i);
  }
  if (p_col < 0 || v_col < 0) return {"report.csv has no speedup_p/speedup_verdict columns"};
  for (std::string line; std::getline(in, line);) {
    auto cells = split(line);
    if (cells.size() <= static_cast<size_t>(std::max(p_col, v_col))) continue;
    const auto &p = cells[static_cast<size_t>(p_col)], &v = cells[static_cast<size_t>(v_col)];
    bool sig = v == "faster" || v == "slower";
    if (sig && (p.empty() || !(std::stod(p) < 0.05))) bad.push_back("significant with p >= 0.05: " + line);
    if (v == "not significant" && (p.empty() || std::stod(p) < 0.05))
      bad.push_back("not significant with p < 0.05: " + line);
  }
  return bad;
}

}  // namespace hpcbench::test
