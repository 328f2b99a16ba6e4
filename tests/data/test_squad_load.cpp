// The SQuAD loader on the shared samples and on bad input.
#include "test_catch.h"

#include "core/error.h"
#include "data/squad.h"
#include "data_test_util.h"

using namespace hpcbench;

TEST_CASE("load_squad reads both official formats", "[squad]") {
  auto v1 = data::load_squad(test::squad_v11());
  CHECK(v1.version == "1.1");
  CHECK(v1.examples.size() == 1449);
  CHECK(v1.mismatched_answers == 0);
  for (auto& e : v1.examples) CHECK_FALSE(e.answers.empty());
  CHECK(v1.examples[0].title == "Super_Bowl_50");

  auto v2 = data::load_squad(test::squad_v20());
  CHECK(v2.version == "v2.0");
  CHECK(v2.examples.size() == 706);
  size_t impossible = 0, plausible = 0;
  for (auto& e : v2.examples) {
    impossible += e.is_impossible;
    plausible += !e.plausible_answers.empty();
    if (e.is_impossible) CHECK(e.answers.empty());
  }
  CHECK(impossible == 320);
  CHECK(plausible == 320);
  CHECK(v2.examples[0].answers[0].text == "France");
  CHECK(v2.examples[0].answers[0].answer_start == 159);
}

TEST_CASE("answers not at answer_start are counted and left out", "[squad]") {
  // answer_start counts code points: "é" is one.
  auto ds = data::parse_squad(R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "caf\u00e9 au lait",
    "qas": [{"id": "q1", "question": "what?", "answers": [{"text": "au", "answer_start": 5}, {"text": "au", "answer_start": 6},
    {"text": "lait", "answer_start": 99}]}]}]}]})",
                              "mem.json");
  REQUIRE(ds.examples.size() == 1);
  CHECK(ds.mismatched_answers == 2);
  REQUIRE(ds.examples[0].answers.size() == 1);
  CHECK(ds.examples[0].answers[0].answer_start == 5);
}

TEST_CASE("bad SQuAD files give errors naming the file and the problem", "[squad]") {
  test::TempDir dir;
  auto check = [&](const std::string& name, const std::string& content, const std::string& what) {
    auto p = dir.path / name;
    write_file_atomic(p, content);
    INFO(name);
    REQUIRE_THROWS_AS(data::load_squad(p), UserError);
    REQUIRE_THROWS_WITH(data::load_squad(p), Catch::Contains(p.string()) && Catch::Contains(what));
  };
  check("malformed.json", R"({"version": "1.1", "data": [ {"title": )", "at byte");
  check("truncated.json", "{\"version\": \"1.1\",\n \"data\": [}", "line 2, column 11");
  check("noversion.json", R"({"data": []})", "version");
  check("badversion.json", R"({"version": "3.0", "data": []})", "unsupported SQuAD version \"3.0\"");
  check("numversion.json", R"({"version": 1.1, "data": []})", "version");
  check("nodata.json", R"({"version": "1.1"})", "\"data\"");
  check("noqas.json", R"({"version": "1.1", "data": [{"paragraphs": [{"context": "c"}]}]})",
        "data[0].paragraphs[0] has no \"qas\"");
  check("noid.json", R"({"version": "1.1", "data": [{"paragraphs": [{"context": "c", "qas": [{"question": "q", "answers": []}]}]}]})",
        "data[0].paragraphs[0].qas[0] has no \"id\"");
  check("badstart.json",
        R"({"version": "1.1", "data": [{"paragraphs": [{"context": "c", "qas": [{"id": "x", "question": "q", "answers": [{"text": "c", "answer_start": "0"}]}]}]}]})",
        "answer_start is a string");
  check("noimpossible.json",
        R"({"version": "v2.0", "data": [{"paragraphs": [{"context": "c", "qas": [{"id": "x", "question": "q", "answers": []}]}]}]})",
        "is_impossible");
  auto missing = dir.path / "missing.json";
  REQUIRE_THROWS_WITH(data::load_squad(missing), Catch::Contains(missing.string()));
}
