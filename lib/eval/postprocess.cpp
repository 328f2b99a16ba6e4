#include "eval/postprocess.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace hpcbench::eval {

std::string substr_codepoints(const std::string& s, int64_t begin, int64_t end) {
  size_t b = s.size(), e = s.size();
  int64_t cp = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    // A code point starts at every byte that is not a continuation byte.
    if (i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cp == begin) b = i;
      if (cp == end) {
        e = i;
        break;
      }
      ++cp;
    }
  }
  return b < e ? s.substr(b, e - b) : std::string();
}

namespace {

struct Candidate {
  int32_t begin, end;  // character offsets; (0, 0) is the null answer
  float score, start_logit, end_logit;
};

// np.argsort(logits)[-1 : -n - 1 : -1]: the n largest, largest first.
std::vector<int> top_indexes(const float* logits, int64_t seq, int n) {
  std::vector<int> idx(static_cast<size_t>(seq));
  std::iota(idx.begin(), idx.end(), 0);
  // Descending by value; among equal values numpy's ascending argsort puts
  // the later index last, so reversed it comes first.
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<int> out;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && logits[idx[j]] == logits[idx[i]]) ++j;
    std::reverse(idx.begin() + static_cast<long>(i), idx.begin() + static_cast<long>(j));
    i = j;
  }
  idx.resize(std::min<size_t>(idx.size(), static_cast<size_t>(n)));
  return idx;
}

}  // namespace

Predictions postprocess_qa_predictions(const std::vector<data::SquadExample>& examples,
                                       const data::Features& f, const std::vector<float>& start_logits,
                                       const std::vector<float>& end_logits, const PostprocessConfig& cfg) {
  const int64_t seq = f.seq_len;
  const size_t n = f.size();
  if (f.offset_begin.size() != n * static_cast<size_t>(seq))
    fail("post-processing needs evaluation features (with offsets)");
  if (start_logits.size() != n * static_cast<size_t>(seq) || end_logits.size() != start_logits.size())
    fail("post-processing: {} logits for {} features of {} tokens", start_logits.size(), n, seq);

  std::vector<std::vector<size_t>> features_of(examples.size());
  for (size_t i = 0; i < n; ++i) features_of.at(static_cast<size_t>(f.example_index[i])).push_back(i);

  Predictions out;
  for (size_t e = 0; e < examples.size(); ++e) {
    std::vector<Candidate> prelim;
    bool have_null = false;
    Candidate null{0, 0, 0, 0, 0};
    for (size_t fi : features_of[e]) {
      const float* s = start_logits.data() + fi * seq;
      const float* en = end_logits.data() + fi * seq;
      const int32_t* ob = f.offset_begin.data() + fi * seq;
      const int32_t* oe = f.offset_end.data() + fi * seq;
      float null_score = s[0] + en[0];
      if (!have_null || null.score > null_score) {
        null = Candidate{0, 0, null_score, s[0], en[0]};
        have_null = true;
      }
      auto starts = top_indexes(s, seq, cfg.n_best_size);
      auto ends = top_indexes(en, seq, cfg.n_best_size);
      for (int si : starts) {
        for (int ei : ends) {
          if (ob[si] < 0 || ob[ei] < 0) continue;  // not context (None offsets)
          if (ei < si || ei - si + 1 > cfg.max_answer_length) continue;
          prelim.push_back(Candidate{ob[si], oe[ei], s[si] + en[ei], s[si], en[ei]});
        }
      }
    }
    float null_score = 0;
    if (cfg.version_2_with_negative && have_null) {
      prelim.push_back(null);
      null_score = null.score;
    }
    // sorted(..., reverse=True) is stable: equal scores keep their order.
    std::stable_sort(prelim.begin(), prelim.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    if (prelim.size() > static_cast<size_t>(cfg.n_best_size)) prelim.resize(static_cast<size_t>(cfg.n_best_size));
    if (cfg.version_2_with_negative && have_null &&
        std::none_of(prelim.begin(), prelim.end(), [](const Candidate& c) { return c.begin == 0 && c.end == 0; }))
      prelim.push_back(null);

    const auto& context = examples[e].context;
    std::vector<std::string> texts;
    for (auto& c : prelim) texts.push_back(substr_codepoints(context, c.begin, c.end));
    if (prelim.empty() || (prelim.size() == 1 && texts[0].empty())) {
      prelim.insert(prelim.begin(), Candidate{-1, -1, 0, 0, 0});
      texts.insert(texts.begin(), "empty");
    }
    if (!cfg.version_2_with_negative) {
      out[examples[e].id] = texts[0];
      continue;
    }
    size_t i = 0;
    while (i < texts.size() && texts[i].empty()) ++i;
    if (i == texts.size()) {  // only null answers: utils_qa.py would fail here
      out[examples[e].id] = "";
      continue;
    }
    // float arithmetic, as on the numpy float32 scalars in utils_qa.py
    float diff = null_score - prelim[i].start_logit - prelim[i].end_logit;
    out[examples[e].id] = diff > cfg.null_score_diff_threshold ? std::string() : texts[i];
  }
  return out;
}

}  // namespace hpcbench::eval
