#pragma once
// Helpers shared by the data tests.
#include <cstdint>
#include <filesystem>
#include <cstring>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "data/tokenizer.h"
#include "test_env.h"

namespace hpcbench::test {

inline std::filesystem::path vocab_path() { return test_data() / "bert-base-uncased" / "vocab.txt"; }
inline std::filesystem::path squad_v11() { return test_data() / "squad" / "dev-v1.1-sample.json"; }
inline std::filesystem::path squad_v20() { return test_data() / "squad" / "dev-v2.0-sample.json"; }

inline const data::WordPieceTokenizer& bert_tokenizer() {
  static const auto tok = data::WordPieceTokenizer::from_file(vocab_path());
  return tok;
}

inline std::vector<int32_t> read_i32(const std::filesystem::path& p) {
  std::string bytes = read_file(p);
  std::vector<int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

}  // namespace hpcbench::test
