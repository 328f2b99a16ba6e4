#include "train/names.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/fetch.h"
#include "hub/resolve.h"
#include "model/bert.h"
#include "train/config.h"

namespace hpcbench::train {
namespace fs = std::filesystem;
namespace {

bool is_preset(const std::string& name) {
  for (const auto& p : model::BertConfig::preset_names())
    if (p == name) return true;
  return false;
}

bool is_path(const std::string& model) {
  std::error_code ec;
  // symlink_status: a loop of links is a path too (the reader names it), not a hub name.
  const auto type = fs::symlink_status(model, ec).type();
  return model.ends_with(".json") || (type != fs::file_type::not_found && type != fs::file_type::none);
}

// Presets the hub does not have under that name (bert-tiny & co) are ours alone.
bool hub_has(const std::string& id) { return id == "bert-base-uncased" || id == "bert-large-uncased"; }

void resolve_model(TrainConfig& cfg) {
  if (is_path(cfg.model)) return;  // as before
  auto [id, revision] = hub::split_revision(cfg.model);
  if (!hub::is_repo_id(id)) return;  // BertConfig::preset names what is wrong with it
  if (auto m = hub::find_cached_model(id, revision)) {
    spdlog::info("--model {}: Hugging Face cache {} (commit {})", cfg.model, m->config.parent_path().string(),
                 m->commit.substr(0, 12));
    cfg.model = m->config.string();
    if (cfg.vocab.empty()) cfg.vocab = m->vocab.string();
    if (cfg.checkpoint.empty()) cfg.checkpoint = m->weights.string();
    return;
  }
  // A preset the hub has (bert-base-uncased) stays the bare architecture where
  // nothing pretrained is needed: synthetic timing runs, or an explicit
  // --checkpoint and --vocab. Real SQuAD without weights is never what was
  // meant, so that fails below with the command that fetches them.
  bool hub_has_it = hub_has(id);
  bool real_data = cfg.train_data != "synthetic" || !cfg.eval_data.empty();
  bool needs_hub = real_data && (cfg.checkpoint.empty() || cfg.vocab.empty());
  if (is_preset(id) && revision == "main" && (!hub_has_it || !needs_hub)) return;
  // A bare name may have been meant as a preset: say which there are.
  std::string presets = id.find('/') == std::string::npos && !hub_has_it
                            ? fmt::format("; or give a preset ({}) or a config.json",
                                          fmt::join(model::BertConfig::preset_names(), ", "))
                            : "";
  fail("--model {}: not in the Hugging Face cache {}{}; run `{}` first (on the login node: compute nodes "
       "usually have no internet; the run itself never downloads){}",
       cfg.model, hub::hub_cache().string(), hub::offline() ? " (HF_HUB_OFFLINE is set)" : "",
       hub::fetch_command(cfg.model), presets);
}

}  // namespace

bool model_brings_vocab(const std::string& model) {
  if (is_path(model)) return false;
  auto [id, revision] = hub::split_revision(model);
  return hub::is_repo_id(id) && (!is_preset(id) || hub_has(id));
}

void resolve_dataset(std::string& value, const char* flag, const char* split) {
  if (!hub::is_dataset_name(value)) return;
  std::error_code ec;
  if (fs::exists(value, ec)) return;  // a file of that name in the working folder wins, as before
  auto p = hub::find_cached_dataset(value, split);
  if (!p)
    fail("{} {}: not in the datasets cache {}; run `{}` first (on the login node)", flag, value,
         (hub::datasets_cache() / value).string(), hub::fetch_command(value));
  value = p->string();
}

void resolve_vocab(std::string& value, const char* flag) {
  std::error_code ec;
  if (value.empty() || fs::exists(value, ec)) return;
  auto [id, revision] = hub::split_revision(value);
  if (!hub::is_repo_id(id)) return;  // the tokenizer names the missing file
  auto m = hub::find_cached_model(id, revision);
  if (!m)
    fail("{} {}: neither a file nor a model in the Hugging Face cache {}; run `{}` first", flag, value,
         hub::hub_cache().string(), hub::fetch_command(value));
  value = m->vocab.string();
}

void resolve_names(TrainConfig& cfg) {
  resolve_dataset(cfg.train_data, "--train-data", "train");
  resolve_dataset(cfg.eval_data, "--eval-data", "dev");
  resolve_model(cfg);
}

}  // namespace hpcbench::train
