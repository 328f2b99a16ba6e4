#include "eval/squad_metrics.h"

#include <utf8proc.h>

#include <algorithm>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace hpcbench::eval {

namespace {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  auto left = static_cast<utf8proc_ssize_t>(s.size());
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

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }
char32_t simple_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t simple_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }

// Unicode's Cased property: letters with case, those with a case mapping
// (circled letters, Roman numerals) and the rest of Other_Lowercase /
// Other_Uppercase that is not also case-ignorable (modifier letters are
// skipped before Cased is asked): ordinal indicators, squared and negative
// circled or squared capitals.
bool is_cased(char32_t c) {
  auto cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return true;
  if (c == 0xAA || c == 0xBA || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189))
    return true;
  return simple_lower(c) != c || simple_upper(c) != c;
}

// Unicode's Case_Ignorable property: categories Mn, Me, Cf, Lm, Sk and the
// word-break classes MidLetter, MidNumLet and Single_Quote.
bool is_case_ignorable(char32_t c) {
  switch (c) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4: case 0x2018: case 0x2019:
    case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A:
      return true;
    default:
      break;
  }
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK;
}

// Python's str.lower(): the simple mapping plus SpecialCasing's one
// unconditional lowercase expansion (U+0130) and the Final_Sigma context
// (CPython's handle_capital_sigma), which a plain tolower misses.
std::u32string python_lower(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char32_t c = s[i];
    if (c == 0x130) {
      out.push_back(U'i');
      out.push_back(0x307);
    } else if (c == 0x3A3) {
      size_t j = i;
      while (j > 0 && is_case_ignorable(s[j - 1])) --j;
      bool final_sigma = j > 0 && is_cased(s[j - 1]);
      if (final_sigma) {
        size_t k = i + 1;
        while (k < s.size() && is_case_ignorable(s[k])) ++k;
        final_sigma = k == s.size() || !is_cased(s[k]);
      }
      out.push_back(final_sigma ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(simple_lower(c));
    }
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

// Python's \w for str patterns: str.isalnum() (letters L*, numbers N*) or '_'.
// Combining marks are not word characters there, so "the\u0301" still holds
// the word "the".
bool is_word(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  auto cat = category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

bool is_ascii_punct(char32_t c) {
  static constexpr std::string_view punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  return c < 0x80 && punct.find(static_cast<char>(c)) != std::string_view::npos;
}

std::u32string normalize(std::string_view s) {
  std::u32string t;
  for (char32_t c : python_lower(decode(s)))
    if (!is_ascii_punct(c)) t.push_back(c);
  // re.sub(r'\b(a|an|the)\b', ' ', text): boundaries are judged on the text
  // before substitution, as re.sub does.
  std::u32string r;
  for (size_t i = 0; i < t.size();) {
    size_t len = 0;
    if (i == 0 || !is_word(t[i - 1])) {
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

// Counter(gold) & Counter(pred), then the harmonic mean of precision/recall.
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
  double precision = 1.0 * same / static_cast<double>(pred.size());
  double recall = 1.0 * same / static_cast<double>(gold.size());
  return (2 * precision * recall) / (precision + recall);
}

struct Scored {
  size_t example;  // index into examples
  double exact, f1;
  bool has_ans;
};

// find_best_thresh of evaluate-v2.0.py for one raw score column.
void best_thresh(const std::vector<data::SquadExample>& examples, const Predictions& preds,
                 const std::vector<Scored>& scored, const NoAnswerProbs& na, bool use_f1, double& best_pct,
                 double& best_t) {
  double num_no_ans = 0;
  for (auto& ex : examples) num_no_ans += ex.answers.empty() ? 1 : 0;
  std::vector<size_t> order(scored.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto prob = [&](size_t i) { return na.at(examples[scored[i].example].id); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prob(a) < prob(b); });
  double cur = num_no_ans, best = cur, thresh = 0.0;
  for (size_t i : order) {
    const auto& s = scored[i];
    double diff;
    if (s.has_ans)
      diff = use_f1 ? s.f1 : s.exact;
    else
      diff = preds.at(examples[s.example].id).empty() ? 0 : -1;
    cur += diff;
    if (cur > best) {
      best = cur;
      thresh = prob(i);
    }
  }
  best_pct = scored.empty() ? 0.0 : 100.0 * best / static_cast<double>(scored.size());
  best_t = thresh;
}

}  // namespace

std::string normalize_answer(std::string_view s) { return encode(normalize(s)); }

std::vector<std::string> answer_tokens(std::string_view s) {
  std::vector<std::string> out;
  auto n = normalize_answer(s);
  for (size_t i = 0; i < n.size();) {
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

SquadMetrics evaluate(const std::vector<data::SquadExample>& examples, const Predictions& preds,
                      const EvalOptions& opt) {
  SquadMetrics m;
  m.v2 = opt.v2;
  std::vector<Scored> scored;
  for (size_t e = 0; e < examples.size(); ++e) {
    const auto& ex = examples[e];
    auto it = preds.find(ex.id);
    if (it == preds.end()) {
      ++m.missing_predictions;
      continue;
    }
    std::vector<std::string> golds;
    for (auto& a : ex.answers)
      if (!opt.v2 || !normalize_answer(a.text).empty()) golds.push_back(a.text);
    if (opt.v2 && golds.empty()) golds.push_back("");
    double em = 0, f1 = 0;
    for (auto& g : golds) {
      em = std::max<double>(em, exact_score(g, it->second));
      f1 = std::max(f1, opt.v2 ? f1_score_v2(g, it->second) : f1_score_v1(g, it->second));
    }
    scored.push_back(Scored{e, em, f1, !ex.answers.empty()});
  }

  // Sums in dataset order, as the scripts add them up.
  double em_sum = 0, f1_sum = 0, has_em = 0, has_f1 = 0, no_em = 0, no_f1 = 0;
  for (const auto& s : scored) {
    double em = s.exact, f1 = s.f1;
    if (opt.v2 && opt.na_probs) {  // apply_no_ans_threshold
      auto p = opt.na_probs->find(examples[s.example].id);
      if (p == opt.na_probs->end())
        fail("no-answer probabilities: none for question {}", examples[s.example].id);
      if (p->second > opt.na_prob_thresh) em = f1 = s.has_ans ? 0.0 : 1.0;
    }
    em_sum += em;
    f1_sum += f1;
    (s.has_ans ? has_em : no_em) += em;
    (s.has_ans ? has_f1 : no_f1) += f1;
    ++(s.has_ans ? m.has_ans_total : m.no_ans_total);
  }
  // evaluate-v1.1.py divides by every question, answered or not.
  m.total = static_cast<int64_t>(scored.size()) + (opt.v2 ? 0 : m.missing_predictions);
  auto pct = [](double s, int64_t n) { return n > 0 ? 100.0 * s / static_cast<double>(n) : 0.0; };
  m.exact = pct(em_sum, m.total);
  m.f1 = pct(f1_sum, m.total);
  m.has_ans_exact = pct(has_em, m.has_ans_total);
  m.has_ans_f1 = pct(has_f1, m.has_ans_total);
  m.no_ans_exact = pct(no_em, m.no_ans_total);
  m.no_ans_f1 = pct(no_f1, m.no_ans_total);
  if (opt.v2 && opt.na_probs) {
    m.has_best = true;
    best_thresh(examples, preds, scored, *opt.na_probs, false, m.best_exact, m.best_exact_thresh);
    best_thresh(examples, preds, scored, *opt.na_probs, true, m.best_f1, m.best_f1_thresh);
  }
  return m;
}

nlohmann::json to_json(const SquadMetrics& m) {
  auto j = nlohmann::json::object();
  j["exact"] = m.exact;
  j["f1"] = m.f1;
  j["total"] = m.total;
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
    if (m.has_best) {
      j["best_exact"] = m.best_exact;
      j["best_exact_thresh"] = m.best_exact_thresh;
      j["best_f1"] = m.best_f1;
      j["best_f1_thresh"] = m.best_f1_thresh;
    }
  }
  if (m.missing_predictions > 0) j["missing_predictions"] = m.missing_predictions;
  return j;
}

}  // namespace hpcbench::eval
