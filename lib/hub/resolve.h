#pragma once
// Names a run can use instead of paths: a hub model id (bert-base-uncased,
// org/name, org/name@revision) and squad / squad_v2. Only the caches are
// read, never the network, so a run on a compute node without internet
// resolves what the login node fetched.
#include <filesystem>
#include <optional>
#include <string>

namespace hpcbench::hub {

struct CachedModel {
  std::string repo_id, revision, commit;
  std::filesystem::path config, vocab, weights;
};

// Splits "org/name@rev" into id and revision (default "main").
std::pair<std::string, std::string> split_revision(const std::string& name);

// The snapshot of repo_id at revision in the hub cache, when it holds
// config.json, vocab.txt and model.safetensors or pytorch_model.bin.
// Throws UserError when the revision is not one (hub/cache.h, is_revision).
std::optional<CachedModel> find_cached_model(const std::string& repo_id, const std::string& revision);

// datasets_cache()/<name>/<split file>; split is "train" or "dev".
std::optional<std::filesystem::path> find_cached_dataset(const std::string& name, const std::string& split);

// The exact command that puts `name` (a model id with optional @revision, or
// a dataset) into the cache.
std::string fetch_command(const std::string& name);

}  // namespace hpcbench::hub
