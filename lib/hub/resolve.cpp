#include "hub/resolve.h"

#include "hub/cache.h"
#include "hub/fetch.h"

#include <fmt/format.h>

namespace hpcbench::hub {
namespace fs = std::filesystem;

std::pair<std::string, std::string> split_revision(const std::string& name) {
  auto at = name.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == name.size()) return {name, "main"};
  return {name.substr(0, at), name.substr(at + 1)};
}

std::optional<CachedModel> find_cached_model(const std::string& repo_id, const std::string& revision) {
  check_revision(revision, fmt::format("{}@{}", repo_id, revision));
  auto snap = snapshot_dir(hub_cache(), repo_id, revision);
  if (!snap) return std::nullopt;
  std::error_code ec;
  // exists() follows the links, so a link to a blob that is gone does not count.
  auto has = [&](const char* f) { return fs::exists(*snap / f, ec); };
  if (!has("config.json") || !has("vocab.txt")) return std::nullopt;
  CachedModel m{repo_id, revision, snap->filename().string(), *snap / "config.json", *snap / "vocab.txt", {}};
  if (has("model.safetensors")) m.weights = *snap / "model.safetensors";
  else if (has("pytorch_model.bin")) m.weights = *snap / "pytorch_model.bin";
  else return std::nullopt;
  return m;
}

std::optional<fs::path> find_cached_dataset(const std::string& name, const std::string& split) {
  for (const auto& f : dataset_files()) {
    if (name != f.dataset || split != f.split) continue;
    fs::path p = datasets_cache() / name / f.file;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

std::string fetch_command(const std::string& name) {
  auto [id, rev] = split_revision(name);
  return rev == "main" ? fmt::format("hpcbench fetch {}", id) : fmt::format("hpcbench fetch {} --revision {}", id, rev);
}

}  // namespace hpcbench::hub
