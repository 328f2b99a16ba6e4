#pragma once
// The model's parameter layout as the strategies see it, taken from the code
// that uses it rather than described again: the sharded engine's units
// (model/sharding_units.h), ddp's buckets (strategies/ddp), and each unit's
// share of the step's matmul work (train/flops.h's count, split by unit).
#include <cstdint>
#include <string>
#include <vector>

namespace hpcbench::model {
struct BertConfig;
}

namespace hpcbench::predict {

struct Layout {
  std::string model;
  int64_t parameters = 0;
  std::vector<std::string> unit_names;   // forward order: embeddings, layer.0.., head
  std::vector<int64_t> unit_numel;
  std::vector<double> unit_share;        // fraction of forward/backward compute, sums to 1
  std::vector<int64_t> param_numel;      // model->parameters() order
  std::vector<size_t> param_unit;
  std::vector<std::vector<size_t>> buckets;  // ddp's, launch order, indices into param_numel
};

// Builds the model on the CPU (its parameters are what is counted) and asks
// the strategies' code for units and buckets. `bucket_mb` as ddp's option.
Layout model_layout(const model::BertConfig& config, int64_t seq_length, double bucket_mb);

}  // namespace hpcbench::predict
