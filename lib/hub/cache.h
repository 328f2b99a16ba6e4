#pragma once
// Where models and datasets live on disk, by the Hugging Face ecosystem's
// conventions, so that a cache filled by Python's huggingface_hub serves
// hpcbench and the other way round:
//   <hub cache>/models--<org>--<name>/blobs/<etag>
//                                   /snapshots/<commit>/<file>  -> ../../blobs/<etag>
//                                   /refs/<revision>            (holds <commit>)
//   <hub cache>/.locks/models--<org>--<name>/<etag>.lock
// The hub cache is $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
// SQuAD lives in a cache of hpcbench's own beside it.
#include <filesystem>
#include <optional>
#include <string>

namespace hpcbench::hub {

std::filesystem::path hf_home();
std::filesystem::path hub_cache();
// $HPCBENCH_DATASETS_CACHE, else hpcbench-datasets beside the hub cache.
std::filesystem::path datasets_cache();
// $HF_ENDPOINT without a trailing slash, else https://huggingface.co.
std::string endpoint();
// $HF_TOKEN, else the token file huggingface-cli login writes ($HF_TOKEN_PATH or $HF_HOME/token); "" if none.
std::string token();
// $HF_HUB_OFFLINE is 1/ON/YES/TRUE.
bool offline();

// "bert-base-uncased" -> "models--bert-base-uncased", "org/x" -> "models--org--x".
std::string repo_folder(const std::string& repo_id);
// A full 40-hex commit id, which names a snapshot without a ref.
bool is_commit_hash(const std::string& revision);
// A branch, tag or commit as git's check-ref-format allows them (branches
// may hold '/': refs/pr/1), and nothing else: every part non-empty, none
// "." or ".." or starting with '.', no control characters, spaces or
// ~^:?*[\, no "@{", at most 255 characters. The revision becomes a path
// (refs/<revision>), so this is what keeps it inside the repository folder.
bool is_revision(const std::string& revision);
// Throws UserError naming `what` (the flag or name given) when
// !is_revision(revision).
void check_revision(const std::string& revision, const std::string& what);
// Hub ids are [org/]name of letters, digits, '-', '_' and '.', with no "..".
bool is_repo_id(const std::string& name);

// The snapshot folder of repo_id at revision in `cache`, if the ref (or the
// commit's folder) is there; says nothing about which files it holds.
std::optional<std::filesystem::path> snapshot_dir(const std::filesystem::path& cache, const std::string& repo_id,
                                                  const std::string& revision);

}  // namespace hpcbench::hub
