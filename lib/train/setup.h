#pragma once
// What a run is made of, built from its configuration: the model
// configuration, the training features, the per-epoch data order.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/features.h"
#include "model/bert.h"
#include "train/config.h"
#include "train/model_shape.h"

namespace torch::optim {
class Optimizer;
}

namespace hpcbench::train {

// A preset name or a config.json; checks the sequence length against the
// position table and applies --dropout.
model::BertConfig model_config(const TrainConfig& cfg);

data::FeatureConfig feature_config(const TrainConfig& cfg);

// --cache-dir: empty means the default folder, "none" disables the cache.
std::filesystem::path feature_cache_dir(const TrainConfig& cfg);

// Synthetic features (seeded) or real SQuAD features (cached), windowed as
// `windows` says (feature_config).
data::Features training_features(const TrainConfig& cfg, const model::BertConfig& mcfg,
                                 const data::FeatureConfig& windows);

// What a results row records as "data", so that runs on different data are
// never compared: "synthetic:<n>:seed<seed>" or "<file name>:<n> features".
std::string data_identity(const TrainConfig& cfg, int64_t num_features);

// This rank's sample order for an epoch, with torch's DistributedSampler
// semantics (randperm seeded with seed + epoch, padded to a multiple of the
// world size by repeating from the start, strided by rank). With one rank it
// is a seeded shuffle of all samples.
at::Tensor epoch_indices(int64_t n, int64_t epoch, int64_t seed, int rank, int world_size);

// Bytes of parameters, gradients, optimizer states and what the strategy
// holds besides (`held`: ddp's buckets) in this process, each storage once.
size_t model_state_bytes(const std::vector<at::Tensor>& params, const torch::optim::Optimizer& opt,
                         const std::vector<at::Tensor>& held = {});

// The evaluation windows [begin, end) rank `rank` of `world_size` runs:
// contiguous blocks in feature order, sized as Accelerate's
// split_between_processes sizes them (the first n % world_size ranks hold
// one more), so that concatenating the blocks in rank order gives every
// window once, in order.
std::pair<int64_t, int64_t> eval_share(int64_t n, int rank, int world_size);

}  // namespace hpcbench::train
