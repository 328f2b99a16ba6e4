// Answers from logits against utils_qa.py's postprocess_qa_predictions
// (tests/reference/squad_eval_postprocess.py): the reference's own features
// (Hugging Face tokenizer, several windows per example) and random logits,
// in v1 and v2 modes with several n-best sizes, answer lengths and
// thresholds. Predictions, n-best lists and null odds must agree.
#include "test_catch.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "data/features.h"
#include "data/squad.h"
#include "eval/postprocess.h"
#include "test_env.h"

using namespace hpcbench;
using nlohmann::json;

namespace {

struct Inputs {
  std::vector<data::SquadExample> examples;
  data::Features features;
  std::vector<float> start, end;
  json cases;
};

template <typename T>
void append_rows(const json& rows, std::vector<T>& out) {
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(v.get<T>());
}

const Inputs& inputs() {
  static const Inputs in = [] {
    auto j = json::parse(read_file(test::reference_dir() / "squad_eval_postprocess.json"));
    Inputs r;
    for (const auto& e : j.at("examples")) {
      data::SquadExample ex;
      ex.id = e.at("id").get<std::string>();
      ex.context = e.at("context").get<std::string>();
      r.examples.push_back(std::move(ex));
    }
    auto& f = r.features;
    f.seq_len = j.at("seq_len").get<int64_t>();
    f.example_index = j.at("example_index").get<std::vector<int32_t>>();
    f.start_positions.assign(f.example_index.size(), 0);
    f.end_positions.assign(f.example_index.size(), 0);
    append_rows(j.at("offset_begin"), f.offset_begin);
    append_rows(j.at("offset_end"), f.offset_end);
    // float32 values written as doubles: the cast back is exact.
    for (const auto& row : j.at("start_logits"))
      for (const auto& v : row) r.start.push_back(static_cast<float>(v.get<double>()));
    for (const auto& row : j.at("end_logits"))
      for (const auto& v : row) r.end.push_back(static_cast<float>(v.get<double>()));
    r.cases = j.at("cases");
    return r;
  }();
  return in;
}

}  // namespace

TEST_CASE("post-processing matches utils_qa.py", "[eval]") {
  const auto& in = inputs();
  REQUIRE(in.examples.size() == 30);
  REQUIRE(in.features.size() > 50);  // several windows per example
  REQUIRE(in.cases.size() == 5);
  for (const auto& c : in.cases) {
    const auto& cj = c.at("config");
    eval::PostprocessConfig cfg;
    cfg.version_2_with_negative = cj.at("version_2_with_negative").get<bool>();
    cfg.n_best_size = cj.at("n_best_size").get<int>();
    cfg.max_answer_length = cj.at("max_answer_length").get<int>();
    cfg.null_score_diff_threshold = cj.at("null_score_diff_threshold").get<double>();
    INFO("config " << cj.dump());
    eval::PostprocessDetails details;
    auto preds = eval::postprocess_qa_predictions(in.examples, in.features, in.start, in.end, cfg, &details);

    auto expected = c.at("predictions").get<eval::Predictions>();
    REQUIRE(preds.size() == expected.size());
    for (const auto& [id, text] : expected) {
      INFO("question " << id);
      REQUIRE(preds.count(id) == 1);
      CHECK(preds.at(id) == text);
    }

    const auto& nbest = c.at("nbest");
    REQUIRE(details.nbest.size() == nbest.size());
    for (const auto& [id, list] : nbest.items()) {
      INFO("n-best of " << id);
      const auto& got = details.nbest.at(id);
      REQUIRE(got.size() == list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        INFO("candidate " << k);
        CHECK(got[k].text == list[k].at("text").get<std::string>());
        CHECK(got[k].start_logit == static_cast<float>(list[k].at("start_logit").get<double>()));
        CHECK(got[k].end_logit == static_cast<float>(list[k].at("end_logit").get<double>()));
        CHECK(got[k].probability == Approx(list[k].at("probability").get<double>()).margin(1e-6));
      }
    }

    auto odds = c.at("null_odds").get<std::map<std::string, double>>();
    REQUIRE(details.null_odds.size() == odds.size());
    for (const auto& [id, v] : odds) {
      INFO("null odds of " << id);
      CHECK(details.null_odds.at(id) == static_cast<double>(static_cast<float>(v)));
    }
  }
}

TEST_CASE("post-processing covers utils_qa.py's edge cases in the reference", "[eval]") {
  // The reference must exercise the paths that matter, or the comparison
  // above proves little: null answers winning in v2, the "empty" fallback,
  // and answers cut by max_answer_length.
  const auto& in = inputs();
  size_t null_wins = 0, empty_fallback = 0, multibyte = 0;
  for (const auto& c : in.cases)
    for (const auto& [id, text] : c.at("predictions").items()) {
      null_wins += text == "" ? 1 : 0;
      empty_fallback += text == "empty" ? 1 : 0;
      auto s = text.get<std::string>();
      multibyte += std::any_of(s.begin(), s.end(), [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; });
    }
  CHECK(null_wins > 5);
  CHECK(empty_fallback > 0);
  CHECK(multibyte > 0);
}
