#pragma once
// `hpcbench fetch`: models from the Hugging Face Hub into its cache layout
// (hub/cache.h) and the SQuAD JSONs into hpcbench's datasets cache. A file
// becomes visible in the cache only whole and checked: it is written to
// <blob>.incomplete (resumed with HTTP Range after a broken connection),
// checked whole (its size, X-Linked-Size or Content-Length as
// huggingface_hub takes it; sha256 for LFS files, against the hub's
// X-Linked-Etag; the git blob id for the others, against their ETag; the
// pinned sums for SQuAD), renamed into place, and only then linked from the
// snapshot. A copy already in the cache is checked the same way on every
// fetch, and one that fails is downloaded again. A lock file per blob (the one huggingface_hub takes) lets two
// fetches of the same file run at once and leaves one good copy.
#include <filesystem>
#include <string>
#include <vector>

namespace hpcbench::hub {

struct FetchedModel {
  std::string repo_id, revision, commit;
  std::filesystem::path snapshot;
  std::vector<std::filesystem::path> files;  // in the snapshot
};

// config.json, vocab.txt and model.safetensors (pytorch_model.bin when the
// repository has no safetensors). Under HF_HUB_OFFLINE=1 nothing is
// downloaded: the cached snapshot is returned, or UserError says it is missing.
FetchedModel fetch_model(const std::string& repo_id, const std::string& revision = "main");

// "squad" (v1.1) and "squad_v2": the datasets fetch knows.
bool is_dataset_name(const std::string& name);
// The train and dev JSONs of `name`, in datasets_cache()/<name>/.
std::vector<std::filesystem::path> fetch_dataset(const std::string& name);

struct DatasetFile {
  const char* dataset;  // squad | squad_v2
  const char* split;    // train | dev
  const char* file;
  uint64_t size;
  const char* sha256;
};
const std::vector<DatasetFile>& dataset_files();

}  // namespace hpcbench::hub
