// Evaluation pieces that need no reference: code point slicing, the
// prediction files, and the errors a user can cause.
#include "test_catch.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "eval/postprocess.h"
#include "eval/prediction_files.h"
#include "eval/squad_metrics.h"
#include "test_env.h"

using namespace hpcbench;

namespace {

// Question "q1" on the context "some context": one feature of 4 tokens whose
// positions 1 and 2 are "some" [0,4) and "context" [5,12); 0 and 3 are not context.
std::pair<std::vector<data::SquadExample>, data::Features> two_word_feature() {
  std::vector<data::SquadExample> examples(1);
  examples[0].id = "q1";
  examples[0].context = "some context";
  data::Features f;
  f.seq_len = 4;
  f.example_index = {0};
  f.start_positions = {0};
  f.end_positions = {0};
  f.offset_begin = {-1, 0, 5, -1};
  f.offset_end = {-1, 4, 12, -1};
  return {examples, f};
}

}  // namespace

TEST_CASE("substr_codepoints slices by code point, as Python does", "[eval]") {
  const std::string s = "a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80z";  // a é 日 😀 z
  CHECK(eval::substr_codepoints(s, 0, 1) == "a");
  CHECK(eval::substr_codepoints(s, 1, 2) == "\xC3\xA9");
  CHECK(eval::substr_codepoints(s, 2, 4) == "\xE6\x97\xA5\xF0\x9F\x98\x80");
  CHECK(eval::substr_codepoints(s, 4, 5) == "z");
  CHECK(eval::substr_codepoints(s, 3, 99) == "\xF0\x9F\x98\x80z");
  CHECK(eval::substr_codepoints(s, 2, 2).empty());
  CHECK(eval::substr_codepoints(s, 4, 2).empty());
  CHECK(eval::substr_codepoints(s, 7, 9).empty());
}

TEST_CASE("predictions.json round-trips and is readable as JSON", "[eval]") {
  test::TempDir dir;
  eval::Predictions p{{"q1", "Denver Broncos"}, {"q2", ""}, {"q3", "\xC3\xA9" "cole \"x\""}};
  eval::write_predictions_json(dir.path / "predictions.json", p);
  CHECK(eval::read_predictions_json(dir.path / "predictions.json") == p);
  auto text = read_file(dir.path / "predictions.json");
  CHECK(text.find("\\u00e9") != std::string::npos);  // ensure_ascii, as json.dumps
  CHECK(text.back() == '\n');

  eval::PostprocessDetails d;
  d.nbest["q1"] = {{"Denver", 1.5f, 2.0f, 0.75}, {"", 0.5f, 0.25f, 0.25}};
  d.null_odds["q1"] = -2.5;
  eval::write_nbest_json(dir.path / "nbest_predictions.json", d);
  eval::write_null_odds_json(dir.path / "null_odds.json", d);
  auto nb = nlohmann::json::parse(read_file(dir.path / "nbest_predictions.json"));
  CHECK(nb.at("q1").at(0).at("text") == "Denver");
  CHECK(nb.at("q1").at(1).at("probability").get<double>() == 0.25);
  auto odds = nlohmann::json::parse(read_file(dir.path / "null_odds.json"));
  CHECK(odds.at("q1").get<double>() == -2.5);
}

TEST_CASE("bad prediction files and inputs give errors naming the problem", "[eval]") {
  test::TempDir dir;
  auto path = dir.path / "p.json";
  write_file_atomic(path, "{\"q1\": 3}");
  CHECK_THROWS_WITH(eval::read_predictions_json(path), Catch::Contains("q1") && Catch::Contains("p.json"));
  write_file_atomic(path, "[1, 2]");
  CHECK_THROWS_AS(eval::read_predictions_json(path), UserError);
  write_file_atomic(path, "{\"q1\": ");
  CHECK_THROWS_WITH(eval::read_predictions_json(path), Catch::Contains("not valid JSON"));
  CHECK_THROWS_AS(eval::read_predictions_json(dir.path / "missing.json"), UserError);

  auto [examples, f] = two_word_feature();
  std::vector<float> ok(4, 0.f), short_logits(3, 0.f);
  CHECK_THROWS_AS(eval::postprocess_qa_predictions(examples, f, short_logits, ok, {}), UserError);
  auto train_features = f;
  train_features.offset_begin.clear();
  CHECK_THROWS_WITH(eval::postprocess_qa_predictions(examples, train_features, ok, ok, {}),
                    Catch::Contains("offsets"));
  auto bad_index = f;
  bad_index.example_index = {3};
  CHECK_THROWS_AS(eval::postprocess_qa_predictions(examples, bad_index, ok, ok, {}), UserError);

  eval::NoAnswerProbs na;  // no probability for q1
  eval::EvalOptions opt;
  opt.v2 = true;
  opt.na_probs = &na;
  CHECK_THROWS_WITH(eval::evaluate(examples, {{"q1", ""}}, opt), Catch::Contains("q1"));
}

TEST_CASE("a tiny hand-checked post-processing", "[eval]") {
  auto [examples, f] = two_word_feature();
  std::vector<float> start{1.f, 3.f, 0.f, 9.f}, end{1.f, 0.f, 2.f, 9.f};  // position 3 is not context
  eval::PostprocessConfig cfg;
  CHECK(eval::postprocess_qa_predictions(examples, f, start, end, cfg).at("q1") == "some context");
  cfg.max_answer_length = 1;
  CHECK(eval::postprocess_qa_predictions(examples, f, start, end, cfg).at("q1") == "some");
  cfg.max_answer_length = 30;
  cfg.version_2_with_negative = true;
  start[0] = end[0] = 3.5f;  // null 7 > best span 5
  CHECK(eval::postprocess_qa_predictions(examples, f, start, end, cfg).at("q1").empty());
  cfg.null_score_diff_threshold = 2.5;
  CHECK(eval::postprocess_qa_predictions(examples, f, start, end, cfg).at("q1") == "some context");
}

TEST_CASE("equal logits are ranked as utils_qa.py ranks them", "[eval]") {
  // With all logits 0, utils_qa.py (numpy argsort, reversed; stable sorted)
  // answers "context": the later index comes first among equals.
  auto [examples, f] = two_word_feature();
  std::vector<float> zeros(4, 0.f);
  CHECK(eval::postprocess_qa_predictions(examples, f, zeros, zeros, {}).at("q1") == "context");
  // NaN logits (a diverged model) must not break the sorts.
  std::vector<float> nan_start{0.f, 1.f, std::nanf(""), 0.f}, end{0.f, 0.f, 2.f, 0.f};
  CHECK_NOTHROW(eval::postprocess_qa_predictions(examples, f, nan_start, end, {}));
}
