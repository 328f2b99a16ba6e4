#pragma once
// Exact match and F1 by the official SQuAD evaluation rules: evaluate-v1.1.py
// and evaluate-v2.0.py (answer normalisation, max over gold answers, and for
// v2.0 the HasAns/NoAns split, the no-answer probability threshold and the
// best threshold).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/squad.h"

namespace hpcbench::eval {

// question id -> predicted answer text ("" = no answer, v2.0)
using Predictions = std::map<std::string, std::string>;

// The official normalize_answer: Python's str.lower() (full Unicode
// lowercasing, with U+0130 and the Greek final sigma), remove ASCII
// punctuation (string.punctuation), remove the words a/an/the (Unicode word
// boundaries, as Python's re), split on Unicode whitespace and join with ' '.
std::string normalize_answer(std::string_view s);
// v2.0's get_tokens: the normalised answer split on ' ' ("" -> none).
std::vector<std::string> answer_tokens(std::string_view s);

// v2.0's compute_exact / compute_f1 (an empty side scores 1 only against an
// empty side); v1.1's f1_score scores 0 whenever nothing is shared.
int exact_score(std::string_view gold, std::string_view pred);
double f1_score_v2(std::string_view gold, std::string_view pred);
double f1_score_v1(std::string_view gold, std::string_view pred);

struct SquadMetrics {
  bool v2 = false;
  double exact = 0, f1 = 0;  // percent
  int64_t total = 0;
  double has_ans_exact = 0, has_ans_f1 = 0;  // v2.0 only
  int64_t has_ans_total = 0;
  double no_ans_exact = 0, no_ans_f1 = 0;
  int64_t no_ans_total = 0;
  int64_t missing_predictions = 0;
  // v2.0 with no-answer probabilities: the best score over all thresholds.
  bool has_best = false;
  double best_exact = 0, best_exact_thresh = 0, best_f1 = 0, best_f1_thresh = 0;
};

// question id -> probability that it has no answer (evaluate-v2.0.py's
// --na-prob-file).
using NoAnswerProbs = std::map<std::string, double>;

struct EvalOptions {
  bool v2 = false;
  // v2.0 only. Null: every probability is 0 (the official default). A
  // question whose probability exceeds na_prob_thresh counts as answered
  // "no answer". Ties in the best-threshold search are taken in dataset
  // order, as the official script does for a probability file written in
  // that order (postprocess writes it so).
  const NoAnswerProbs* na_probs = nullptr;
  double na_prob_thresh = 1.0;
};

// v1.1: a question without a prediction counts as 0 (and in the total), as
// evaluate-v1.1.py does; v2.0: it is left out (evaluate-v2.0.py leaves it
// out of the total; its HasAns/NoAns split would then fail, ours counts the
// predicted questions only). Throws UserError when na_probs lacks a
// predicted question.
SquadMetrics evaluate(const std::vector<data::SquadExample>& examples, const Predictions& predictions,
                      const EvalOptions& options);
inline SquadMetrics evaluate(const std::vector<data::SquadExample>& examples, const Predictions& predictions,
                             bool v2) {
  return evaluate(examples, predictions, EvalOptions{v2});
}

// The official scripts' output keys (exact, f1, total, HasAns_*, NoAns_*,
// best_*), plus missing_predictions when there are any.
nlohmann::json to_json(const SquadMetrics& m);

}  // namespace hpcbench::eval
