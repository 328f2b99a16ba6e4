// run_qa.py features against the Hugging Face reference
// (tests/reference/squad_features.py): every question of both shared
// samples, run_qa's default windows and small ones (answers at borders).
#include "test_catch.h"
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "data/features.h"
#include "data/squad.h"
#include "data_test_util.h"

using namespace hpcbench;

namespace {

struct Reference {
  size_t n = 0, L = 0;
  std::vector<int32_t> ids, types, mask, start, end, example, obegin, oend;
};

Reference read_reference(const std::string& name, int max_len, int stride) {
  auto v = test::read_i32(test::reference_dir() / fmt::format("squad_features_{}_{}_{}.bin", name, max_len, stride));
  Reference r;
  r.n = static_cast<size_t>(v.at(0));
  r.L = static_cast<size_t>(v.at(1));
  size_t pos = 2;
  auto take = [&](std::vector<int32_t>& dst, size_t count) {
    REQUIRE(pos + count <= v.size());
    dst.assign(v.begin() + static_cast<ptrdiff_t>(pos), v.begin() + static_cast<ptrdiff_t>(pos + count));
    pos += count;
  };
  for (auto* a : {&r.ids, &r.types, &r.mask}) take(*a, r.n * r.L);
  for (auto* a : {&r.start, &r.end, &r.example}) take(*a, r.n);
  for (auto* a : {&r.obegin, &r.oend}) take(*a, r.n * r.L);
  REQUIRE(pos == v.size());
  return r;
}

// The first cell that differs, described precisely; empty when equal.
std::string first_mismatch(const char* field, const std::vector<int32_t>& got, const std::vector<int32_t>& want,
                           size_t row_len, const data::Features& f, const std::vector<data::SquadExample>& ex) {
  if (got.size() != want.size()) return fmt::format("{}: {} values, reference {}", field, got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    size_t row = i / row_len, col = i % row_len;
    const auto& e = ex.at(static_cast<size_t>(f.example_index.at(row)));
    return fmt::format("{}: feature {} (question {} \"{}\"), position {}: got {}, reference {}", field, row, e.id,
                       e.question, col, got[i], want[i]);
  }
  return {};
}

void compare(const std::string& name, const std::filesystem::path& file, int max_len, int stride) {
  INFO(name << " max_seq_length " << max_len << " doc_stride " << stride);
  auto ref = read_reference(name, max_len, stride);
  auto ds = data::load_squad(file);
  data::FeatureConfig cfg{max_len, stride, 64};
  auto f = data::build_features(ds.examples, test::bert_tokenizer(), cfg, /*train=*/false);
  REQUIRE(f.seq_len == static_cast<int64_t>(ref.L));
  REQUIRE(f.size() == ref.n);
  const size_t L = ref.L;
  std::string m;
  for (auto [field, got, want, row] :
       {std::tuple{"example_index", &f.example_index, &ref.example, size_t{1}},
        std::tuple{"input_ids", &f.input_ids, &ref.ids, L}, std::tuple{"token_type_ids", &f.token_type_ids, &ref.types, L},
        std::tuple{"attention_mask", &f.attention_mask, &ref.mask, L},
        std::tuple{"start_positions", &f.start_positions, &ref.start, size_t{1}},
        std::tuple{"end_positions", &f.end_positions, &ref.end, size_t{1}},
        std::tuple{"offset_begin", &f.offset_begin, &ref.obegin, L}, std::tuple{"offset_end", &f.offset_end, &ref.oend, L}}) {
    m = first_mismatch(field, *got, *want, row, f, ds.examples);
    INFO(m);
    CHECK(m.empty());
  }

  // Train features: the same windows and labels, no offsets; any number of
  // threads gives the same result.
  auto t1 = data::build_features(ds.examples, test::bert_tokenizer(), cfg, /*train=*/true, 1);
  auto t3 = data::build_features(ds.examples, test::bert_tokenizer(), cfg, /*train=*/true, 3);
  CHECK(t1.offset_begin.empty());
  CHECK(t1.input_ids == ref.ids);
  CHECK(t1.start_positions == ref.start);
  CHECK(t1.end_positions == ref.end);
  CHECK(t3.input_ids == t1.input_ids);
  CHECK(t3.start_positions == t1.start_positions);
  CHECK(t3.example_index == t1.example_index);
}

}  // namespace

TEST_CASE("no question of the shared samples exceeds 64 tokens", "[features]") {
  // build_features cuts questions to max_query_length (64) and run_qa.py
  // does not: parity with it rests on this.
  auto meta = nlohmann::json::parse(read_file(test::reference_dir() / "squad_features_meta.json"));
  for (const char* name : {"v11", "v20"}) CHECK(meta[name]["max_question_tokens"].get<int>() <= 64);
  for (const auto& file : {test::squad_v11(), test::squad_v20()})
    for (const auto& ex : data::load_squad(file).examples)
      CHECK(test::bert_tokenizer().encode(data::python_lstrip(ex.question)).size() <= 64);
}

TEST_CASE("SQuAD v1.1 features match run_qa.py", "[features]") {
  compare("v11", test::squad_v11(), 384, 128);
}
TEST_CASE("SQuAD v2.0 features match run_qa.py", "[features]") {
  compare("v20", test::squad_v20(), 384, 128);
}
TEST_CASE("answers at window borders match run_qa.py (max_seq_length 64, doc_stride 16)", "[features]") {
  compare("v11", test::squad_v11(), 64, 16);
  compare("v20", test::squad_v20(), 64, 16);
}

TEST_CASE("max_query_length cuts long questions", "[features]") {
  data::SquadExample ex;
  ex.id = "long";
  for (int i = 0; i < 100; ++i) ex.question += "word ";
  ex.context = "the answer is here today";
  ex.answers.push_back({"here", 14});
  data::FeatureConfig cfg{64, 16, 10};
  auto f = data::build_features({ex}, test::bert_tokenizer(), cfg, false);
  REQUIRE(f.size() == 1);
  CHECK(f.input_ids[11] == test::bert_tokenizer().sep_id());  // [CLS] + 10 question tokens
  CHECK(f.start_positions[0] == 15);
  CHECK(f.end_positions[0] == 15);
  // run_qa.py's quirk, kept for parity: an answer starting in the last
  // context token of a padded window gets the last position as its start
  // (the scan runs on over [SEP] and the padding, whose offsets are (0, 0)).
  ex.context = "the answer is here";
  f = data::build_features({ex}, test::bert_tokenizer(), cfg, false);
  CHECK(f.start_positions[0] == 63);
  CHECK(f.end_positions[0] == 15);
}
