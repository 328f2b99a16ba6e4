#include "eval/squad_metrics.h"

#include <utf8proc.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace hpcbench::eval {

namespace {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp;
    auto n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // invalid byte: keep it visible rather than drop text
      cp = 0xFFFD;
      n = 1;
    }
    out.push_back(static_cast<char32_t>(cp));
    p += n;
    left -= n;
  }
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  utf8proc_uint8_t buf[4];
  for (char32_t c : s) {
    auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

// Python's str.isspace(): category Zs or bidirectional class WS, B or S.
bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  auto* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

// Python's \w for str patterns: alphanumerics (letters L*, numbers N*) and '_'.
bool is_word(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

bool is_ascii_punct(char32_t c) {
  static constexpr std::string_view punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  return c < 0x80 && punct.find(static_cast<char>(c)) != std::string_view::npos;
}

std::u32string normalize(std::string_view s) {
  // lower (simple case mapping: str.lower()'s few one-to-many special cases,
  // such as U+0130, are not reproduced) and remove punctuation
  std::u32string t;
  for (char32_t c : decode(s)) {
    c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
    if (!is_ascii_punct(c)) t.push_back(c);
  }
  // re.sub(r'\b(a|an|the)\b', ' ', text)
  std::u32string r;
  for (size_t i = 0; i < t.size();) {
    bool boundary_before = i == 0 || !is_word(t[i - 1]);
    size_t len = 0;
    if (boundary_before) {
      for (std::u32string_view w : {U"a", U"an", U"the"}) {
        if (t.compare(i, w.size(), w) == 0 && (i + w.size() == t.size() || !is_word(t[i + w.size()]))) {
          len = w.size();
          break;
        }
      }
    }
    if (len) {
      r.push_back(U' ');
      i += len;
    } else {
      r.push_back(t[i++]);
    }
  }
  // ' '.join(text.split())
  std::u32string out;
  for (size_t i = 0; i < r.size();) {
    while (i < r.size() && is_space(r[i])) ++i;
    size_t j = i;
    while (j < r.size() && !is_space(r[j])) ++j;
    if (j > i) {
      if (!out.empty()) out.push_back(U' ');
      out.append(r, i, j - i);
    }
    i = j;
  }
  return out;
}

double f1_from_tokens(const std::vector<std::string>& gold, const std::vector<std::string>& pred) {
  std::unordered_map<std::string, int> counts;
  for (auto& t : gold) ++counts[t];
  int same = 0;
  for (auto& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0;
  double precision = static_cast<double>(same) / static_cast<double>(pred.size());
  double recall = static_cast<double>(same) / static_cast<double>(gold.size());
  return 2 * precision * recall / (precision + recall);
}

}  // namespace

std::string normalize_answer(std::string_view s) { return encode(normalize(s)); }

std::vector<std::string> answer_tokens(std::string_view s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  auto n = normalize_answer(s);
  size_t i = 0;
  while (i < n.size()) {
    size_t j = n.find(' ', i);
    if (j == std::string::npos) j = n.size();
    if (j > i) out.push_back(n.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

int exact_score(std::string_view gold, std::string_view pred) {
  return normalize_answer(gold) == normalize_answer(pred) ? 1 : 0;
}

double f1_score_v2(std::string_view gold, std::string_view pred) {
  auto g = answer_tokens(gold), p = answer_tokens(pred);
  if (g.empty() || p.empty()) return g == p ? 1.0 : 0.0;
  return f1_from_tokens(g, p);
}

double f1_score_v1(std::string_view gold, std::string_view pred) {
  return f1_from_tokens(answer_tokens(gold), answer_tokens(pred));
}

SquadMetrics evaluate(const std::vector<data::SquadExample>& examples, const Predictions& preds, bool v2) {
  SquadMetrics m;
  m.v2 = v2;
  double em_sum = 0, f1_sum = 0, has_em = 0, has_f1 = 0, no_em = 0, no_f1 = 0;
  for (const auto& ex : examples) {
    auto it = preds.find(ex.id);
    if (it == preds.end()) {
      ++m.missing_predictions;
      if (!v2) ++m.total;  // evaluate-v1.1.py counts it, with score 0
      continue;
    }
    const std::string& pred = it->second;
    std::vector<std::string> golds;
    for (auto& a : ex.answers)
      if (!v2 || !normalize_answer(a.text).empty()) golds.push_back(a.text);
    if (v2 && golds.empty()) golds.push_back("");
    double em = 0, f1 = 0;
    for (auto& g : golds) {
      em = std::max<double>(em, exact_score(g, pred));
      f1 = std::max(f1, v2 ? f1_score_v2(g, pred) : f1_score_v1(g, pred));
    }
    ++m.total;
    em_sum += em;
    f1_sum += f1;
    if (!ex.answers.empty()) {
      ++m.has_ans_total;
      has_em += em;
      has_f1 += f1;
    } else {
      ++m.no_ans_total;
      no_em += em;
      no_f1 += f1;
    }
  }
  auto pct = [](double s, int64_t n) { return n > 0 ? 100.0 * s / static_cast<double>(n) : 0.0; };
  m.exact = pct(em_sum, m.total);
  m.f1 = pct(f1_sum, m.total);
  m.has_ans_exact = pct(has_em, m.has_ans_total);
  m.has_ans_f1 = pct(has_f1, m.has_ans_total);
  m.no_ans_exact = pct(no_em, m.no_ans_total);
  m.no_ans_f1 = pct(no_f1, m.no_ans_total);
  return m;
}

nlohmann::json to_json(const SquadMetrics& m) {
  nlohmann::json j = {{"exact", m.exact}, {"f1", m.f1}, {"total", m.total}};
  if (m.v2) {
    if (m.has_ans_total > 0) {
      j["HasAns_exact"] = m.has_ans_exact;
      j["HasAns_f1"] = m.has_ans_f1;
      j["HasAns_total"] = m.has_ans_total;
    }
    if (m.no_ans_total > 0) {
      j["NoAns_exact"] = m.no_ans_exact;
      j["NoAns_f1"] = m.no_ans_f1;
      j["NoAns_total"] = m.no_ans_total;
    }
  }
  if (m.missing_predictions > 0) j["missing_predictions"] = m.missing_predictions;
  return j;
}

}  // namespace hpcbench::eval
