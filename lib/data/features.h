#pragma once
// Training / evaluation features exactly as Hugging Face's run_qa.py builds
// them (prepare_train_features / prepare_validation_features).
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace hpcbench::data {

struct FeatureConfig {
  int max_seq_length = 384;
  int doc_stride = 128;
  int max_query_length = 64;
};

// Struct of arrays; row-major [num_features, seq_len] for the per-token fields.
struct Features {
  int64_t seq_len = 0;
  std::vector<int32_t> input_ids;
  std::vector<int32_t> token_type_ids;
  std::vector<int32_t> attention_mask;
  std::vector<int32_t> start_positions;  // [num_features]; CLS (0) when the answer is not inside
  std::vector<int32_t> end_positions;    // [num_features]
  std::vector<int32_t> example_index;    // [num_features]: which example the window came from
  // [num_features * seq_len] character offsets (begin, end) of context tokens;
  // (-1, -1) for question, special and padding tokens (None in run_qa.py).
  std::vector<int32_t> offset_begin;
  std::vector<int32_t> offset_end;

  size_t size() const { return start_positions.size(); }
};

class WordPieceTokenizer;
struct SquadExample;

// run_qa.py's windows for each example, in order: [CLS] question [SEP]
// context-window [SEP] [PAD]..., with the question lstripped and cut to
// cfg.max_query_length tokens (run_qa.py does not cut; no question of the
// shared samples is longer than 64 tokens, which the parity test checks).
// Labels and example_index are filled for train and eval alike (validation
// loss); offsets only when !train (the offset vectors stay empty for train).
// `threads` = 0: one per hardware thread; the result does not depend on it.
// Throws UserError when cfg cannot hold a window (doc_stride too large for
// the room the question leaves, as Hugging Face's tokenizer refuses too).
Features build_features(const std::vector<SquadExample>& examples, const WordPieceTokenizer& tokenizer,
                        const FeatureConfig& cfg, bool train, unsigned threads = 0);

// Seeded, deterministic SQuAD-shaped features drawn directly as token ids:
// random question and context lengths, padding, answer spans inside the
// context and about a third unanswerable (labels 0/0). Special ids follow
// bert-base-uncased ([PAD]=0, [CLS]=101, [SEP]=102) when vocab_size > 2000,
// else [PAD]=0, [CLS]=1, [SEP]=2. Offsets and example_index are filled.
Features synthetic_features(size_t n, const FeatureConfig& cfg, int64_t vocab_size, uint64_t seed);

// Throws UserError naming the flag when cfg is unusable.
void validate(const FeatureConfig& cfg);

// Features of a SQuAD file plus what the loader counted.
struct SquadFeatures {
  Features features;
  size_t examples = 0;
  size_t impossible = 0;
  size_t mismatched_answers = 0;
  bool from_cache = false;
  std::filesystem::path cache_file;  // the cache file read or written; empty: none
};

// The checksum a feature cache file carries over everything before it (a
// 64-bit multiply-xorshift hash, several GB/s: cheap beside tokenizing).
uint64_t feature_cache_checksum(std::string_view bytes);

// $XDG_CACHE_HOME/hpcbench/features, else ~/.cache/hpcbench/features.
std::filesystem::path default_feature_cache_dir();

// Features for a SQuAD file, read from `cache_dir` when built before with
// the same file content, vocabulary, config, train flag and code version,
// else built and written there (atomically). An empty cache_dir disables the
// cache. Logs cache hits and writes.
SquadFeatures load_or_build_squad_features(const std::filesystem::path& squad, const std::filesystem::path& vocab,
                                           const FeatureConfig& cfg, bool train,
                                           const std::filesystem::path& cache_dir);
Features load_or_build_features(const std::filesystem::path& squad, const std::filesystem::path& vocab,
                                const FeatureConfig& cfg, bool train, const std::filesystem::path& cache_dir);

}  // namespace hpcbench::data
