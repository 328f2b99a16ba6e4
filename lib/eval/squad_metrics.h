#pragma once
// Exact match and F1 by the official SQuAD evaluation rules: evaluate-v1.1.py
// and evaluate-v2.0.py (answer normalisation, max over gold answers, and for
// v2.0 the HasAns/NoAns split).
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/squad.h"

namespace hpcbench::eval {

// question id -> predicted answer text ("" = no answer, v2.0)
using Predictions = std::map<std::string, std::string>;

// lower, remove ASCII punctuation (Python's string.punctuation), remove the
// words a/an/the, collapse whitespace: the official normalize_answer.
std::string normalize_answer(std::string_view s);
// Whitespace-separated tokens of the normalised answer (v2.0's get_tokens).
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
};

// v1.1: a question without a prediction counts as 0 (and in the total), as
// evaluate-v1.1.py does; v2.0: it is left out, as evaluate-v2.0.py does.
SquadMetrics evaluate(const std::vector<data::SquadExample>& examples, const Predictions& predictions, bool v2);
nlohmann::json to_json(const SquadMetrics& m);

}  // namespace hpcbench::eval
