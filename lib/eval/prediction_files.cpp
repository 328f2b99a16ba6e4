#include "eval/prediction_files.h"

#include <nlohmann/json.hpp>

#include "core/bounded_read.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace hpcbench::eval {

namespace {

// ensure_ascii, indent 4 and a final newline, as utils_qa.py's json.dumps.
void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(4, ' ', /*ensure_ascii=*/true) + "\n");
}

}  // namespace

void write_predictions_json(const std::filesystem::path& path, const Predictions& predictions) {
  write_json(path, nlohmann::json(predictions));
}

void write_nbest_json(const std::filesystem::path& path, const PostprocessDetails& details) {
  auto j = nlohmann::json::object();
  for (const auto& [id, list] : details.nbest) {
    auto& a = j[id] = nlohmann::json::array();
    for (const auto& c : list)
      a.push_back({{"start_logit", c.start_logit},
                   {"end_logit", c.end_logit},
                   {"text", c.text},
                   {"probability", c.probability}});
  }
  write_json(path, j);
}

void write_null_odds_json(const std::filesystem::path& path, const PostprocessDetails& details) {
  write_json(path, nlohmann::json(details.null_odds));
}

Predictions read_predictions_json(const std::filesystem::path& path) {
  auto text = read_file(path, file_limit::kDataset);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{} is not valid JSON (at byte {}): {}", path.string(), e.byte, e.what());
  }
  if (!j.is_object()) fail("{}: expected a JSON object {{question id: answer text}}", path.string());
  Predictions out;
  for (const auto& [id, v] : j.items()) {
    if (!v.is_string()) fail("{}: the answer to \"{}\" is a {}, expected a string", path.string(), id, v.type_name());
    out[id] = v.get<std::string>();
  }
  return out;
}

}  // namespace hpcbench::eval
