#pragma once
// SQuAD answers from start/end logits, as transformers' question-answering
// example (utils_qa.py, postprocess_qa_predictions) computes them.
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

// start/end logits: [num_features * seq_len], row-major, in feature order.
// features must carry example_index and the context offsets (eval features).
Predictions postprocess_qa_predictions(const std::vector<data::SquadExample>& examples,
                                       const data::Features& features, const std::vector<float>& start_logits,
                                       const std::vector<float>& end_logits, const PostprocessConfig& cfg);

// Code points [begin, end) of a UTF-8 string, as Python slices a str.
std::string substr_codepoints(const std::string& s, int64_t begin, int64_t end);

}  // namespace hpcbench::eval
