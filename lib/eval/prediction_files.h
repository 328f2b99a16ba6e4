#pragma once
// The files run_qa.py / utils_qa.py leave in the output folder, in the same
// layout, so that the official evaluate-v*.py scripts can read them:
// predictions.json ({id: text}), nbest_predictions.json and, for v2.0,
// null_odds.json (evaluate-v2.0.py's --na-prob-file).
#include <filesystem>

#include "eval/postprocess.h"
#include "eval/squad_metrics.h"

namespace hpcbench::eval {

// Each is written atomically; throws UserError naming the path.
void write_predictions_json(const std::filesystem::path& path, const Predictions& predictions);
void write_nbest_json(const std::filesystem::path& path, const PostprocessDetails& details);
void write_null_odds_json(const std::filesystem::path& path, const PostprocessDetails& details);

// {id: text}; throws UserError naming the path and the problem.
Predictions read_predictions_json(const std::filesystem::path& path);

}  // namespace hpcbench::eval
