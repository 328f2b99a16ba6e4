#pragma once
// BERT uncased WordPiece tokenization, token for token and offset for offset
// the same as Hugging Face's fast BertTokenizer (BertNormalizer with
// lowercase + strip accents + clean text + CJK spacing, BertPreTokenizer,
// WordPiece with "##" continuations and [UNK] for words over 100 chars).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hpcbench::data {

struct Token {
  int32_t id = 0;
  // [begin, end) in Unicode code points of the original text, as Python
  // indexes strings (what offset_mapping holds).
  int32_t begin = 0;
  int32_t end = 0;
};

class WordPieceTokenizer {
 public:
  // One token per line, the line number is the id (a later duplicate wins, as
  // in transformers' load_vocab). Throws UserError naming the file when it is
  // unreadable, empty, or lacks [CLS], [SEP], [PAD] or [UNK].
  static WordPieceTokenizer from_file(const std::filesystem::path& vocab_txt);
  // `origin` names the vocabulary in error messages.
  WordPieceTokenizer(std::vector<std::string> vocab, std::string origin);

  // Appends the tokens of `text` (UTF-8; no special tokens) to `out`.
  // Thread-safe: scratch space is per thread.
  void encode(std::string_view text, std::vector<Token>& out) const;
  std::vector<Token> encode(std::string_view text) const;

  int32_t token_id(std::string_view token) const;  // -1 when absent
  const std::string& token(int32_t id) const { return vocab_.at(static_cast<size_t>(id)); }
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  // A hash of the vocabulary (cache keys).
  uint64_t fingerprint() const { return fingerprint_; }

  static constexpr size_t kMaxInputCharsPerWord = 100;

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key = 0;  // index into vocab_ of the key string
    int32_t id = -1;   // -1: empty slot
  };
  int32_t lookup(uint64_t hash, std::string_view piece, bool continuation) const;
  void insert(const std::string& key, int32_t id);
  void wordpiece(std::string_view word, const std::vector<uint32_t>& char_bytes,
                 const std::vector<int32_t>& char_orig, std::vector<Token>& out) const;

  std::vector<std::string> vocab_;
  std::string origin_;
  std::vector<Slot> slots_;  // open addressing, power-of-two size
  uint64_t mask_ = 0;
  size_t max_piece_bytes_ = 0;
  int32_t cls_ = -1, sep_ = -1, pad_ = -1, unk_ = -1;
  std::vector<std::pair<std::string, int32_t>> specials_;  // matched in raw text
  uint64_t fingerprint_ = 0;
};

// Python's str.lstrip(): drops leading characters for which str.isspace()
// holds (run_qa.py lstrips questions).
std::string_view python_lstrip(std::string_view s);

// Number of code points of valid UTF-8 (Python's len()).
size_t count_code_points(std::string_view s);

}  // namespace hpcbench::data
