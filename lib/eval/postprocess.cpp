#include "eval/postprocess.h"

#include <algorithm>
#include <cmath>
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

// np.argsort(logits)[-1 : -n - 1 : -1]: the n largest, largest first. Among
// equal values an ascending stable sort puts the later index last, so
// reversed it comes first; NaN sorts as numpy does (above everything).
std::vector<int> top_indexes(const float* logits, int64_t seq, int n) {
  std::vector<int> idx(static_cast<size_t>(seq));
  std::iota(idx.begin(), idx.end(), 0);
  auto before = [logits](int a, int b) {
    float x = logits[a], y = logits[b];
    bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn != yn) return xn;
    if (!xn && x != y) return x > y;
    return a > b;
  };
  auto keep = std::min(idx.size(), static_cast<size_t>(std::max(n, 0)));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(keep), idx.end(), before);
  idx.resize(keep);
  return idx;
}

// sorted(..., key=score, reverse=True) is stable: equal scores keep their
// order. NaN scores (a diverged model) go last rather than break the sort.
bool higher_score(const Candidate& a, const Candidate& b) {
  if (std::isnan(a.score) || std::isnan(b.score)) return !std::isnan(a.score) && std::isnan(b.score);
  return a.score > b.score;
}

// Which features belong to each example, checked against the inputs' sizes.
std::vector<std::vector<size_t>> features_by_example(const std::vector<data::SquadExample>& examples,
                                                     const data::Features& f, const std::vector<float>& start_logits,
                                                     const std::vector<float>& end_logits) {
  const int64_t seq = f.seq_len;
  const size_t n = f.size();
  const size_t cells = n * static_cast<size_t>(seq);
  if (f.offset_begin.size() != cells || f.offset_end.size() != cells || f.example_index.size() != n)
    fail("post-processing needs evaluation features (with offsets and example indexes)");
  if (start_logits.size() != cells || end_logits.size() != cells)
    fail("post-processing: {} start and {} end logits for {} features of {} tokens", start_logits.size(),
         end_logits.size(), n, seq);
  std::vector<std::vector<size_t>> features_of(examples.size());
  for (size_t i = 0; i < n; ++i) {
    auto e = f.example_index[i];
    if (e < 0 || static_cast<size_t>(e) >= examples.size())
      fail("post-processing: feature {} belongs to example {}, but there are {} examples", i, e, examples.size());
    features_of[static_cast<size_t>(e)].push_back(i);
  }
  return features_of;
}

// One example's n-best candidates over its features, best first, with the
// null answer (v2) and utils_qa.py's guard, and the text of each.
struct Ranked {
  std::vector<Candidate> prelim;
  std::vector<std::string> texts;
  float null_score = 0;
};

Ranked rank_candidates(const data::SquadExample& ex, const std::vector<size_t>& features, const data::Features& f,
                       const std::vector<float>& start_logits, const std::vector<float>& end_logits,
                       const PostprocessConfig& cfg) {
  const int64_t seq = f.seq_len;
  const bool v2 = cfg.version_2_with_negative;
  Ranked r;
  auto& prelim = r.prelim;
  bool have_null = false;
  Candidate null{0, 0, 0, 0, 0};
  for (size_t fi : features) {
    const float* s = start_logits.data() + fi * static_cast<size_t>(seq);
    const float* en = end_logits.data() + fi * static_cast<size_t>(seq);
    const int32_t* ob = f.offset_begin.data() + fi * static_cast<size_t>(seq);
    const int32_t* oe = f.offset_end.data() + fi * static_cast<size_t>(seq);
    float feature_null = s[0] + en[0];
    if (!have_null || null.score > feature_null) {
      null = Candidate{0, 0, feature_null, s[0], en[0]};
      have_null = true;
    }
    auto starts = top_indexes(s, seq, cfg.n_best_size);
    auto ends = top_indexes(en, seq, cfg.n_best_size);
    for (int si : starts) {
      for (int ei : ends) {
        if (ob[si] < 0 || ob[ei] < 0) continue;  // offset None: not context
        if (ei < si || ei - si + 1 > cfg.max_answer_length) continue;
        prelim.push_back(Candidate{ob[si], oe[ei], s[si] + en[ei], s[si], en[ei]});
      }
    }
  }
  if (v2 && have_null) {
    prelim.push_back(null);
    r.null_score = null.score;
  }
  std::stable_sort(prelim.begin(), prelim.end(), higher_score);
  if (prelim.size() > static_cast<size_t>(cfg.n_best_size)) prelim.resize(static_cast<size_t>(cfg.n_best_size));
  if (v2 && have_null &&
      std::none_of(prelim.begin(), prelim.end(), [](const Candidate& c) { return c.begin == 0 && c.end == 0; }))
    prelim.push_back(null);
  for (auto& c : prelim) r.texts.push_back(substr_codepoints(ex.context, c.begin, c.end));
  // utils_qa.py's guard against having no non-null candidate at all.
  if (prelim.empty() || (prelim.size() == 1 && r.texts[0].empty())) {
    prelim.insert(prelim.begin(), Candidate{-1, -1, 0, 0, 0});
    r.texts.insert(r.texts.begin(), "empty");
  }
  return r;
}

// The candidates with their softmax probabilities, as utils_qa.py writes nbest.
void record_nbest(PostprocessDetails& details, const std::string& id, const Ranked& r) {
  const auto& prelim = r.prelim;
  float top = prelim[0].score;
  for (auto& c : prelim) top = std::max(top, c.score);
  double sum = 0;
  std::vector<double> p(prelim.size());
  for (size_t k = 0; k < prelim.size(); ++k) sum += p[k] = std::exp(static_cast<double>(prelim[k].score - top));
  auto& list = details.nbest[id];
  list.clear();
  for (size_t k = 0; k < prelim.size(); ++k)
    list.push_back(NbestEntry{r.texts[k], prelim[k].start_logit, prelim[k].end_logit, p[k] / sum});
}

}  // namespace

Predictions postprocess_qa_predictions(const std::vector<data::SquadExample>& examples, const data::Features& f,
                                       const std::vector<float>& start_logits, const std::vector<float>& end_logits,
                                       const PostprocessConfig& cfg, PostprocessDetails* details) {
  const auto features_of = features_by_example(examples, f, start_logits, end_logits);
  const bool v2 = cfg.version_2_with_negative;
  Predictions out;
  for (size_t e = 0; e < examples.size(); ++e) {
    const auto r = rank_candidates(examples[e], features_of[e], f, start_logits, end_logits, cfg);
    const auto& texts = r.texts;
    const std::string& id = examples[e].id;
    if (!v2) {
      out[id] = texts[0];
    } else {
      size_t i = 0;
      while (i < texts.size() && texts[i].empty()) ++i;
      if (i == texts.size()) {
        out[id] = "";
      } else {
        // float arithmetic and comparison, as on numpy float32 scalars
        float diff = r.null_score - r.prelim[i].start_logit - r.prelim[i].end_logit;
        if (details) details->null_odds[id] = diff;
        out[id] = diff > static_cast<float>(cfg.null_score_diff_threshold) ? std::string() : texts[i];
      }
    }
    if (details) record_nbest(*details, id, r);
  }
  return out;
}

}  // namespace hpcbench::eval
