#include "train/setup.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <filesystem>

#include "core/error.h"
#include "data/features.h"
#include "distributed/sampler.h"

namespace hpcbench::train {

model::BertConfig model_config(const TrainConfig& cfg) {
  namespace fs = std::filesystem;
  // Whatever is there and is not a folder is the reader's to take or refuse
  // (a FIFO, a device, a loop of links: core/bounded_read.h).
  std::error_code ec;
  const auto type = fs::symlink_status(cfg.model, ec).type();
  bool is_file = cfg.model.ends_with(".json") ||
                 (type != fs::file_type::not_found && type != fs::file_type::none && !fs::is_directory(cfg.model, ec));
  auto m = is_file ? model::BertConfig::from_json(cfg.model) : model::BertConfig::preset(cfg.model);
  if (cfg.max_seq_length > m.max_position_embeddings)
    fail("--max-seq-length {}: the model {} has only {} positions", cfg.max_seq_length, m.name,
         m.max_position_embeddings);
  if (cfg.dropout >= 0) {
    m.hidden_dropout_prob = cfg.dropout;
    m.attention_probs_dropout_prob = cfg.dropout;
  }
  return m;
}

data::FeatureConfig feature_config(const TrainConfig& cfg) {
  data::FeatureConfig f;
  f.max_seq_length = static_cast<int>(cfg.max_seq_length);
  f.doc_stride = static_cast<int>(cfg.doc_stride);
  f.max_query_length = static_cast<int>(cfg.max_query_length);
  return f;
}

std::filesystem::path feature_cache_dir(const TrainConfig& cfg) {
  if (cfg.cache_dir == "none") return {};
  return cfg.cache_dir.empty() ? data::default_feature_cache_dir() : std::filesystem::path(cfg.cache_dir);
}

data::Features training_features(const TrainConfig& cfg, const model::BertConfig& mcfg,
                                 const data::FeatureConfig& fcfg) {
  if (cfg.train_data == "synthetic")
    return data::synthetic_features(static_cast<size_t>(cfg.synthetic_samples), fcfg, mcfg.vocab_size,
                                     static_cast<uint64_t>(cfg.seed));
  auto sf = data::load_or_build_squad_features(cfg.train_data, cfg.vocab, fcfg, /*train=*/true, feature_cache_dir(cfg));
  if (sf.features.size() == 0) fail("--train-data {}: no training features", cfg.train_data);
  // An id past the embedding would fail deep in the first forward, naming
  // neither the data nor the vocabulary.
  const auto& ids = sf.features.input_ids;
  if (auto top = std::max_element(ids.begin(), ids.end()); top != ids.end() && *top >= mcfg.vocab_size)
    fail("--train-data {}: token id {} is outside the model's vocabulary of {} ids (--model {}); the features were "
         "{} with --vocab {}, which does not belong to this model",
         cfg.train_data, *top, mcfg.vocab_size, cfg.model,
         sf.from_cache ? "read from the feature cache " + sf.cache_file.string() : std::string("built"), cfg.vocab);
  return std::move(sf.features);
}

std::string data_identity(const TrainConfig& cfg, int64_t num_features) {
  if (cfg.train_data == "synthetic")
    return fmt::format("synthetic:{}:seed{}", num_features, cfg.seed);
  return fmt::format("{}:{}", std::filesystem::path(cfg.train_data).filename().string(), num_features);
}

at::Tensor epoch_indices(int64_t n, int64_t epoch, int64_t seed, int rank, int world_size) {
  dist::DistributedSampler sampler(n, world_size, rank, /*shuffle=*/true, static_cast<uint64_t>(seed));
  sampler.set_epoch(epoch);
  auto idx = sampler.indices();
  return at::tensor(idx, at::TensorOptions().dtype(at::kLong));
}

size_t model_state_bytes(const std::vector<at::Tensor>& params, const torch::optim::Optimizer& opt,
                         const std::vector<at::Tensor>& held) {
  // Counted by storage, once each: ddp's gradients are views of its buckets,
  // and a tensor counted twice would flatter nobody but mislead everyone.
  std::set<const void*> seen;
  size_t bytes = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const void* key = t.storage().unsafeGetStorageImpl();
    if (seen.insert(key).second) bytes += t.storage().nbytes();
  };
  for (const auto& p : params) {
    add(p);
    add(p.grad());
  }
  for (const auto& t : held) add(t);
  for (const auto& [key, state] : opt.state()) {
    if (auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(state.get())) {
      add(s->exp_avg());
      add(s->exp_avg_sq());
      add(s->max_exp_avg_sq());
    }
  }
  return bytes;
}

std::pair<int64_t, int64_t> eval_share(int64_t n, int rank, int world_size) {
  const int64_t per = n / world_size, extra = n % world_size;
  const int64_t begin = rank * per + std::min<int64_t>(rank, extra);
  return {begin, begin + per + (rank < extra ? 1 : 0)};
}

}  // namespace hpcbench::train
