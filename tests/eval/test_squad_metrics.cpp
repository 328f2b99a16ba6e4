// EM/F1 against the official evaluate-v1.1.py / evaluate-v2.0.py
// (tests/reference/squad_eval_reference.py): normalisation of hand-made
// strings (Unicode included), hand-made datasets with several gold answers
// and unanswerable questions, and the shared dev samples with synthetic
// predictions; every number the scripts print, to 1e-9.
#include "test_catch.h"
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "data/squad.h"
#include "eval/squad_metrics.h"
#include "test_env.h"

using namespace hpcbench;
using nlohmann::json;

namespace {

const json& cases() {
  static const json j = json::parse(read_file(test::reference_dir() / "squad_eval_cases.json"));
  return j;
}

}  // namespace

TEST_CASE("normalize_answer, exact and F1 match the official scripts on hand-made strings", "[eval]") {
  const auto& pairs = cases().at("pairs");
  REQUIRE(pairs.size() > 500);
  size_t checked = 0;
  for (const auto& p : pairs) {
    auto gold = p.at("gold").get<std::string>(), pred = p.at("pred").get<std::string>();
    INFO("gold \"" << gold << "\", prediction \"" << pred << "\"");
    REQUIRE(eval::normalize_answer(gold) == p.at("norm_gold").get<std::string>());
    REQUIRE(eval::normalize_answer(pred) == p.at("norm_pred").get<std::string>());
    REQUIRE(eval::exact_score(gold, pred) == p.at("exact").get<int>());
    REQUIRE(eval::exact_score(gold, pred) == p.at("exact_v1").get<int>());
    REQUIRE(eval::f1_score_v1(gold, pred) == Approx(p.at("f1_v1").get<double>()).margin(1e-12));
    REQUIRE(eval::f1_score_v2(gold, pred) == Approx(p.at("f1_v2").get<double>()).margin(1e-12));
    ++checked;
  }
  CHECK(checked == pairs.size());
}

TEST_CASE("evaluate matches evaluate-v1.1.py and evaluate-v2.0.py on whole datasets", "[eval]") {
  const auto& datasets = cases().at("datasets");
  REQUIRE(datasets.size() >= 9);
  for (const auto& d : datasets) {
    const auto name = d.at("name").get<std::string>();
    INFO("dataset " << name);
    data::SquadDataset ds = d.contains("file")
                                ? data::load_squad(test::test_data() / "squad" / d.at("file").get<std::string>())
                                : data::parse_squad(d.at("json").dump(), name);
    REQUIRE(ds.mismatched_answers == 0);  // the official scripts would see answers the loader left out
    auto preds = d.at("predictions").get<eval::Predictions>();
    eval::EvalOptions opt;
    opt.v2 = d.at("version") == "v2";
    eval::NoAnswerProbs na;
    if (d.contains("na_probs")) {
      na = d.at("na_probs").get<eval::NoAnswerProbs>();
      opt.na_probs = &na;
      opt.na_prob_thresh = d.at("na_prob_thresh").get<double>();
    }
    auto m = eval::evaluate(ds.examples, preds, opt);
    const auto& expected = d.at("expected");
    if (!opt.v2) {
      CHECK(m.exact == Approx(expected.at("exact_match").get<double>()).margin(1e-9));
      CHECK(m.f1 == Approx(expected.at("f1").get<double>()).margin(1e-9));
      CHECK(m.total == static_cast<int64_t>(ds.examples.size()));
      CHECK(m.missing_predictions == static_cast<int64_t>(ds.examples.size() - preds.size()));
      continue;
    }
    auto got = eval::to_json(m);
    for (const auto& [key, value] : expected.items()) {
      INFO("key " << key);
      REQUIRE(got.contains(key));
      if (value.is_number_integer())
        CHECK(got.at(key).get<int64_t>() == value.get<int64_t>());
      else
        CHECK(got.at(key).get<double>() == Approx(value.get<double>()).margin(1e-9));
    }
    for (const auto& [key, value] : got.items()) {
      INFO("key " << key);
      CHECK(expected.contains(key));
    }
  }
}

TEST_CASE("the shared samples are scored with their real gold answers", "[eval]") {
  // Guards the comparison above against a loader that drops answers: the
  // 2nd gold answer of a question must still count.
  auto ds = data::load_squad(test::test_data() / "squad" / "dev-v1.1-sample.json");
  eval::Predictions preds;
  size_t multi = 0;
  for (const auto& ex : ds.examples) {
    REQUIRE(!ex.answers.empty());
    preds[ex.id] = ex.answers.back().text;
    multi += ex.answers.size() > 1 ? 1 : 0;
  }
  CHECK(multi > ds.examples.size() / 2);
  auto m = eval::evaluate(ds.examples, preds, false);
  CHECK(m.exact == 100.0);
  CHECK(m.f1 == 100.0);
}

TEST_CASE("normalize_answer matches Python on random Unicode strings", "[eval]") {
  const auto& fuzz = cases().at("fuzz");
  REQUIRE(fuzz.size() >= 3000);
  size_t differ = 0;
  for (const auto& f : fuzz) {
    auto s = f.at("s").get<std::string>();
    auto expected = f.at("norm").get<std::string>();
    auto got = eval::normalize_answer(s);
    if (got != expected) {
      ++differ;
      UNSCOPED_INFO("\"" << s << "\" -> \"" << got << "\", Python \"" << expected << "\"");
    }
  }
  CHECK(differ == 0);
}
