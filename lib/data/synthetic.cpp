#include <algorithm>

#include "core/error.h"
#include "data/features.h"

namespace hpcbench::data {

namespace {
// splitmix64: the same stream on every platform and standard library (the
// std:: distributions are implementation-defined).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (hi >= lo); the modulo bias is irrelevant here.
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};
}  // namespace

Features synthetic_features(size_t n, const FeatureConfig& cfg, int64_t vocab_size, uint64_t seed) {
  validate(cfg);
  if (vocab_size < 16) fail("synthetic features need a vocabulary of at least 16 tokens, got {}", vocab_size);
  const bool bert = vocab_size > 2000;
  const int32_t pad = 0, cls = bert ? 101 : 1, sep = bert ? 102 : 2;
  // bert-base-uncased's ids below 1000 are [unused] and special tokens.
  const int64_t first_word = bert ? 1000 : 3;
  const size_t L = static_cast<size_t>(cfg.max_seq_length);

  Features f;
  f.seq_len = cfg.max_seq_length;
  f.input_ids.assign(n * L, pad);
  f.token_type_ids.assign(n * L, 0);
  f.attention_mask.assign(n * L, 0);
  f.offset_begin.assign(n * L, -1);
  f.offset_end.assign(n * L, -1);
  f.start_positions.assign(n, 0);
  f.end_positions.assign(n, 0);
  f.example_index.resize(n);

  Rng rng{seed};
  const int64_t max_q = std::min<int64_t>(cfg.max_query_length, static_cast<int64_t>(L) - 4);
  for (size_t i = 0; i < n; ++i) {
    int32_t* ids = f.input_ids.data() + i * L;
    int32_t* types = f.token_type_ids.data() + i * L;
    int32_t* mask = f.attention_mask.data() + i * L;
    // SQuAD questions are ~6-25 tokens; contexts fill from a quarter of the
    // window to all of it (long paragraphs give full windows).
    const int64_t q = rng.range(std::min<int64_t>(4, max_q), std::min<int64_t>(max_q, 24));
    const int64_t room = static_cast<int64_t>(L) - q - 3;
    const int64_t c = rng.next() % 3 == 0 ? room : rng.range(std::max<int64_t>(1, room / 4), room);
    size_t k = 0;
    ids[k++] = cls;
    for (int64_t j = 0; j < q; ++j) ids[k++] = static_cast<int32_t>(rng.range(first_word, vocab_size - 1));
    ids[k++] = sep;
    const size_t first_ctx = k;
    for (int64_t j = 0; j < c; ++j) {
      f.offset_begin[i * L + k] = static_cast<int32_t>(5 * j);
      f.offset_end[i * L + k] = static_cast<int32_t>(5 * j + 4);
      types[k] = 1;
      ids[k++] = static_cast<int32_t>(rng.range(first_word, vocab_size - 1));
    }
    types[k] = 1;
    ids[k++] = sep;
    std::fill(mask, mask + k, 1);
    f.example_index[i] = static_cast<int32_t>(i);
    if (rng.next() % 3 != 0) {
      const int64_t s = rng.range(0, c - 1);
      const int64_t e = std::min<int64_t>(c - 1, s + rng.range(0, 9));
      f.start_positions[i] = static_cast<int32_t>(first_ctx + static_cast<size_t>(s));
      f.end_positions[i] = static_cast<int32_t>(first_ctx + static_cast<size_t>(e));
    }
  }
  return f;
}

}  // namespace hpcbench::data
