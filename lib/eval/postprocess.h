#pragma once
// SQuAD answers from start/end logits, as transformers' question-answering
// example (utils_qa.py, postprocess_qa_predictions) computes them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/features.h"
#include "data/squad.h"
#include "eval/squad_metrics.h"

namespace hpcbench::eval {

struct PostprocessConfig {
  bool version_2_with_negative = false;
  int n_best_size = 20;
  int max_answer_length = 30;
  double null_score_diff_threshold = 0.0;
};

struct NbestEntry {
  std::string text;
  float start_logit = 0, end_logit = 0;
  double probability = 0;  // softmax of start_logit + end_logit over the n-best
};

// What utils_qa.py writes besides the predictions.
struct PostprocessDetails {
  std::map<std::string, std::vector<NbestEntry>> nbest;  // id -> candidates, best first
  // v2.0: id -> null score minus the best non-null score (scores_diff_json,
  // null_odds.json); usable as evaluate-v2.0's no-answer probabilities.
  NoAnswerProbs null_odds;
};

// start/end logits: [num_features * seq_len], row-major, in feature order.
// features must carry example_index and the context offsets (eval features).
// Scores are float sums, as utils_qa.py adds numpy float32 logits. Ties in
// the logits are broken as a stable argsort would (numpy's default sort
// leaves them unspecified). An example whose candidates are all empty gets
// "" in v2.0 mode, where utils_qa.py would fail. Throws UserError when the
// sizes do not match.
Predictions postprocess_qa_predictions(const std::vector<data::SquadExample>& examples,
                                       const data::Features& features, const std::vector<float>& start_logits,
                                       const std::vector<float>& end_logits, const PostprocessConfig& cfg,
                                       PostprocessDetails* details = nullptr);

// Code points [begin, end) of a UTF-8 string, as Python slices a str.
std::string substr_codepoints(const std::string& s, int64_t begin, int64_t end);

}  // namespace hpcbench::eval
