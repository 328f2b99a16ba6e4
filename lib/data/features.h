#pragma once
// Training / evaluation features exactly as Hugging Face's run_qa.py builds
// them (prepare_train_features / prepare_validation_features).
#include <cstdint>
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

}  // namespace hpcbench::data
