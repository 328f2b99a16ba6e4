// Synthetic features: deterministic and shaped like SQuAD's.
#include "test_catch.h"

#include "core/error.h"
#include "data/features.h"

using namespace hpcbench;

TEST_CASE("synthetic features are deterministic", "[synthetic]") {
  data::FeatureConfig cfg{128, 32, 64};
  auto a = data::synthetic_features(200, cfg, 30522, 7);
  auto b = data::synthetic_features(200, cfg, 30522, 7);
  auto c = data::synthetic_features(200, cfg, 30522, 8);
  CHECK(a.input_ids == b.input_ids);
  CHECK(a.start_positions == b.start_positions);
  CHECK(a.end_positions == b.end_positions);
  CHECK(a.attention_mask == b.attention_mask);
  CHECK(a.input_ids != c.input_ids);
  // A prefix of a longer draw is the shorter draw.
  auto d = data::synthetic_features(50, cfg, 30522, 7);
  CHECK(std::equal(d.input_ids.begin(), d.input_ids.end(), a.input_ids.begin()));
}

TEST_CASE("synthetic features are well-formed", "[synthetic]") {
  for (int64_t vocab : {int64_t{30522}, int64_t{100}}) {
    data::FeatureConfig cfg{96, 32, 64};
    const size_t n = 600;
    auto f = data::synthetic_features(n, cfg, vocab, 1);
    const size_t L = 96;
    const int32_t cls = vocab > 2000 ? 101 : 1, sep = vocab > 2000 ? 102 : 2;
    REQUIRE(f.size() == n);
    REQUIRE(f.input_ids.size() == n * L);
    REQUIRE(f.offset_begin.size() == n * L);
    size_t impossible = 0, padded = 0;
    for (size_t i = 0; i < n; ++i) {
      const int32_t* ids = &f.input_ids[i * L];
      const int32_t* types = &f.token_type_ids[i * L];
      const int32_t* mask = &f.attention_mask[i * L];
      size_t len = 0;
      while (len < L && mask[len] == 1) ++len;
      for (size_t k = len; k < L; ++k) REQUIRE((mask[k] == 0 && ids[k] == 0 && types[k] == 0));
      padded += len < L;
      REQUIRE(ids[0] == cls);
      REQUIRE(ids[len - 1] == sep);
      size_t q_sep = 1;
      while (ids[q_sep] != sep) ++q_sep;
      REQUIRE(q_sep >= 2);
      const size_t first_ctx = q_sep + 1, last_ctx = len - 2;
      REQUIRE(first_ctx <= last_ctx);
      for (size_t k = 0; k < len; ++k) {
        REQUIRE(types[k] == (k >= first_ctx ? 1 : 0));
        REQUIRE(ids[k] >= 0);
        REQUIRE(ids[k] < vocab);
        bool ctx = k >= first_ctx && k <= last_ctx;
        REQUIRE((f.offset_begin[i * L + k] >= 0) == ctx);
      }
      int32_t s = f.start_positions[i], e = f.end_positions[i];
      if (s == 0 && e == 0) {
        ++impossible;
      } else {
        REQUIRE(s >= static_cast<int32_t>(first_ctx));
        REQUIRE(e >= s);
        REQUIRE(e <= static_cast<int32_t>(last_ctx));
      }
    }
    CHECK(impossible > n / 5);
    CHECK(impossible < n / 2);
    CHECK(padded > n / 3);
    CHECK(padded < n);
  }
  REQUIRE_THROWS_AS(data::synthetic_features(1, data::FeatureConfig{}, 5, 1), UserError);
  REQUIRE_THROWS_AS(data::synthetic_features(1, data::FeatureConfig{64, 64, 16}, 30522, 1), UserError);
}
