#include "hub/fetch.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "hub/cache.h"
#include "core/file_lock.h"
#include "hub/git_blob.h"
#include "hub/http.h"
#include "hub/sha256.h"

namespace hpcbench::hub {
namespace fs = std::filesystem;
namespace {

// huggingface_hub's quote(revision, safe=""): branch names may hold '/'.
std::string quote(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

// repo_id is empty for files that are not a hub repository's (SQuAD).
[[noreturn]] void http_failure(const Response& r, const std::string& url, const std::string& repo_id,
                               const std::string& token) {
  std::string hub_msg = r.header("x-error-message");
  std::string why = hub_msg.empty() ? "" : fmt::format(" (hub: {})", hub_msg);
  if (repo_id.empty()) fail("{}: HTTP {}{}", url, r.status, why);
  if (r.status == 401 || r.status == 403) {
    if (token.empty())
      fail("{}: HTTP {}{}: {} does not exist, or it is gated or private and needs a token: "
           "set HF_TOKEN (https://huggingface.co/settings/tokens)", url, r.status, why, repo_id);
    fail("{}: HTTP {}{}: the token in HF_TOKEN may not read {} (gated: accept its licence on the hub first)", url,
         r.status, why, repo_id);
  }
  if (r.status == 404) fail("{}: HTTP 404 not found{}: check the model id {} and --revision", url, why, repo_id);
  fail("{}: HTTP {}{}", url, r.status, why);
}

struct Meta {
  std::string commit, etag, download_url;
  uint64_t size = 0;
  bool lfs = false;
};

// What huggingface_hub's get_hf_file_metadata learns: HEAD on the resolve URL,
// following relative redirects only (a renamed repository), not the absolute
// one to the storage host, whose Location is where the bytes come from.
std::optional<Meta> file_meta(const std::string& repo_id, const std::string& revision, const std::string& file,
                              const std::string& token, bool missing_ok) {
  std::string url = fmt::format("{}/{}/resolve/{}/{}", endpoint(), repo_id, quote(revision), file);
  Response r;
  for (int hops = 0;; ++hops) {
    r = http_head(url, token);
    std::string loc = r.header("location");
    if (r.status >= 300 && r.status < 400 && !loc.empty() && loc.front() == '/' && hops < 10) {
      auto s = url.find("://");
      url = url.substr(0, url.find('/', s + 3)) + loc;
      continue;
    }
    break;
  }
  if (r.status == 404 && missing_ok) return std::nullopt;
  bool redirect = r.status >= 300 && r.status < 400;
  if (r.status != 200 && !redirect) http_failure(r, url, repo_id, token);
  Meta m;
  m.commit = r.header("x-repo-commit");
  if (!is_commit_hash(m.commit))
    fail("{}: no X-Repo-Commit header in the answer: HF_ENDPOINT={} does not look like a Hugging Face hub", url,
         endpoint());
  std::string linked = normalize_etag(r.header("x-linked-etag"));
  m.etag = linked.empty() ? normalize_etag(r.header("etag")) : linked;
  // The ETag names the blob's file: only what the hub sends (a git or LFS
  // hash) is taken, never a name that could lead out of blobs/.
  if (m.etag.empty() || m.etag.size() > 128 || m.etag.front() == '.' ||
      !std::all_of(m.etag.begin(), m.etag.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }))
    fail("{}: no usable ETag header in the answer ('{}': a blob's name is letters, digits, '-' and '_')", url,
         m.etag);
  m.lfs = is_sha256(linked);
  std::string size = r.header("x-linked-size");
  if (size.empty() && !redirect) size = r.header("content-length");
  m.size = size.empty() ? 0 : std::strtoull(size.c_str(), nullptr, 10);
  m.download_url = redirect ? r.header("location") : url;
  if (m.download_url.empty()) fail("{}: HTTP {} without a Location", url, r.status);
  return m;
}

// What a downloaded or cached file must be: its size (0: unknown), and its
// SHA-256 (an LFS file's X-Linked-Etag, a pinned dataset sum) or git blob id
// (the ETag of a file not in LFS); empty: not known.
struct Expected {
  uint64_t size = 0;
  std::string sha256, git_sha1;
};

// Why `file` is not what `want` says ("" when it is).
std::string mismatch(const fs::path& file, const Expected& want) {
  std::error_code ec;
  uint64_t got = fs::file_size(file, ec);
  if (ec) return fmt::format("cannot be read ({})", ec.message());
  if (want.size && got != want.size) return fmt::format("{} bytes, {} expected", got, want.size);
  if (!want.sha256.empty()) {
    std::string actual = sha256_file(file);
    if (actual != want.sha256) return fmt::format("checksum mismatch (sha256 {}, {} expected)", actual, want.sha256);
  }
  if (!want.git_sha1.empty()) {
    std::string actual = git_blob_sha1_file(file);
    if (actual != want.git_sha1)
      return fmt::format("checksum mismatch ({} bytes whose git blob id is {}, while the hub's ETag names {})", got,
                         actual, want.git_sha1);
  }
  return "";
}

// Downloads url into dest through dest.incomplete under `lock`, checks it
// whole (size and hash) and renames it into place; on a failed check
// nothing stays behind. A copy already in place is checked the same way
// first, and replaced when it is not the file (a download an earlier
// version kept unchecked, a damaged disk). Returns whether it downloaded.
// Why a filesystem call failed, in words that name a loop of links as one.
std::string fs_reason(const std::error_code& ec) {
  if (ec == std::errc::too_many_symbolic_link_levels) return "a loop of symbolic links (ELOOP)";
  if (ec == std::errc::not_a_directory) return "a part of the path is not a folder";
  return ec.message();
}

void make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create the folder {}: {}", dir.string(), fs_reason(ec));
}

// Whether `p` is there; a path that cannot be looked at (a loop of links, a
// folder without permission) is an error naming why, not "not there".
bool present(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) fail("cannot look at {}: {}", p.string(), fs_reason(ec));
  return fs::exists(st);
}

bool download_checked(const std::string& url, const fs::path& dest, const fs::path& lock, const std::string& token,
                      const Expected& want, const std::string& label, const std::string& repo_id) {
  FileLock held(lock, "another download of the same file");
  std::error_code ec;
  if (present(dest)) {
    auto why = mismatch(dest, want);
    if (why.empty()) return false;  // already here, or another fetch finished it while we waited
    spdlog::warn("{}: the copy in the cache ({}) is not the file: {}; downloading it again", label, dest.string(), why);
    fs::remove(dest, ec);
    if (ec) fail("{}: cannot remove the damaged copy {}: {}", label, dest.string(), fs_reason(ec));
  }
  make_folder(dest.parent_path());
  fs::path part = dest;
  part += ".incomplete";
  if (fs::exists(part, ec) && fs::file_size(part, ec) > 0)
    spdlog::info("{}: resuming after {} bytes already downloaded", label, fs::file_size(part, ec));
  Response r = http_download(url, part, token, want.size, label);
  if (r.status != 200 && r.status != 206) {
    // A server error may pass: keep what arrived for the next fetch to resume.
    if (r.status < 500) fs::remove(part, ec);
    http_failure(r, url, repo_id, token);
  }
  if (!fs::exists(part, ec)) fail("{}: nothing was downloaded from {}; fetch again", label, url);
  if (auto why = mismatch(part, want); !why.empty()) {
    fs::remove(part, ec);
    fail("{}: the download from {} is not the file: {}; it was discarded, nothing was kept (a proxy or mirror "
         "altering files? fetch again)", label, url, why);
  }
  fs::rename(part, dest, ec);
  if (ec) fail("{}: cannot move into place: {}", dest.string(), fs_reason(ec));
  return true;
}

// snapshots/<commit>/<file> -> ../../blobs/<etag>, made under a temporary
// name and renamed over, so readers see the old link or the new one.
void link_into_snapshot(const fs::path& snapshot, const std::string& file, const std::string& etag) {
  make_folder(snapshot);
  fs::path link = snapshot / file;
  fs::path tmp = snapshot / fmt::format(".{}.{}.tmp", file, ::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(fs::path("..") / ".." / "blobs" / etag, tmp, ec);
  if (ec) fail("{}: cannot create the link: {}", tmp.string(), fs_reason(ec));
  fs::rename(tmp, link, ec);
  if (ec) fail("{}: cannot create the link: {}", link.string(), fs_reason(ec));
}

std::optional<fs::path> cached_weights(const fs::path& snap) {
  for (const char* w : {"model.safetensors", "pytorch_model.bin"})
    if (present(snap / w)) return snap / w;
  return std::nullopt;
}

}  // namespace

FetchedModel fetch_model(const std::string& repo_id, const std::string& revision) {
  if (!is_repo_id(repo_id)) fail("{}: not a Hugging Face model id ([org/]name)", repo_id);
  check_revision(revision, fmt::format("{}@{}", repo_id, revision));
  fs::path cache = hub_cache();
  FetchedModel out{repo_id, revision, "", {}, {}};
  if (offline()) {
    auto snap = snapshot_dir(cache, repo_id, revision);
    auto weights = snap ? cached_weights(*snap) : std::nullopt;
    if (!snap || !present(*snap / "config.json") || !present(*snap / "vocab.txt") || !weights)
      fail("HF_HUB_OFFLINE is set and {} (revision {}) is not complete in the cache {}: run `hpcbench fetch {}` "
           "where there is internet access (the login node) with the same HF_HOME", repo_id, revision,
           cache.string(), repo_id);
    out.snapshot = *snap;
    out.commit = snap->filename().string();
    out.files = {*snap / "config.json", *snap / "vocab.txt", *weights};
    spdlog::info("{}: offline, found in the cache at {}", repo_id, snap->string());
    return out;
  }
  std::string tok = token();
  fs::path repo_dir = cache / repo_folder(repo_id);
  std::vector<std::pair<std::string, Meta>> files;
  for (const char* f : {"config.json", "vocab.txt"}) files.emplace_back(f, *file_meta(repo_id, revision, f, tok, false));
  if (auto m = file_meta(repo_id, revision, "model.safetensors", tok, true)) files.emplace_back("model.safetensors", *m);
  else files.emplace_back("pytorch_model.bin", *file_meta(repo_id, revision, "pytorch_model.bin", tok, false));

  for (auto& [file, m] : files) {
    fs::path blob = repo_dir / "blobs" / m.etag;
    fs::path snap = repo_dir / "snapshots" / m.commit;
    // LFS files by their SHA-256, the others by their git blob id: both are
    // the ETag the hub gives, so the bytes are checked against the name
    // they are stored under.
    Expected want{m.size, m.lfs ? m.etag : "", !m.lfs && is_git_blob_id(m.etag) ? m.etag : ""};
    if (!download_checked(m.download_url, blob, cache / ".locks" / repo_folder(repo_id) / (m.etag + ".lock"), tok,
                          want, fmt::format("{}/{}", repo_id, file), repo_id))
      spdlog::info("{}/{}: already in the cache", repo_id, file);
    link_into_snapshot(snap, file, m.etag);
    out.commit = m.commit;
    out.snapshot = snap;
    out.files.push_back(snap / file);
  }
  // The ref last: `run` trusts a ref to name a complete snapshot.
  if (revision != out.commit) {
    make_folder((repo_dir / "refs" / revision).parent_path());  // refs/pr/1
    write_file_atomic(repo_dir / "refs" / revision, out.commit);
  }
  return out;
}

const std::vector<DatasetFile>& dataset_files() {
  // Sizes and sums as tensorflow-datasets pins them for these exact URLs:
  // github.com/tensorflow/datasets, tensorflow_datasets/datasets/squad/checksums.tsv
  // (commit 9a3caa6e17907b8987576f5a1bee4bac77e829d5).
  static const std::vector<DatasetFile> files = {
      {"squad", "train", "train-v1.1.json", 30288272, "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955"},
      {"squad", "dev", "dev-v1.1.json", 4854279, "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"},
      {"squad_v2", "train", "train-v2.0.json", 42123633, "68dcfbb971bd3e96d5b46c7177b16c1a4e7d4bdef19fb204502738552dede002"},
      {"squad_v2", "dev", "dev-v2.0.json", 4370528, "80a5225e94905956a6446d296ca1093975c4d3b3260f1d6c8f68bc2ab77182d8"},
  };
  return files;
}

bool is_dataset_name(const std::string& name) { return name == "squad" || name == "squad_v2"; }

std::vector<fs::path> fetch_dataset(const std::string& name) {
  if (!is_dataset_name(name)) fail("{}: unknown dataset (squad or squad_v2)", name);
  // The official location; HPCBENCH_SQUAD_URL names a mirror (same file names).
  const char* base_env = std::getenv("HPCBENCH_SQUAD_URL");
  std::string base = base_env && *base_env ? base_env : "https://rajpurkar.github.io/SQuAD-explorer/dataset";
  while (!base.empty() && base.back() == '/') base.pop_back();
  fs::path dir = datasets_cache() / name;
  std::vector<fs::path> out;
  for (const auto& f : dataset_files()) {
    if (name != f.dataset) continue;
    fs::path dest = dir / f.file;
    std::error_code ec;
    const Expected want{f.size, f.sha256, ""};
    if (fs::exists(dest, ec) && (offline() || mismatch(dest, want).empty())) {
      spdlog::info("{}/{}: already in the cache", name, f.file);
    } else if (offline()) {
      fail("HF_HUB_OFFLINE is set and {} is not in the cache {}: run `hpcbench fetch {}` where there is internet "
           "access (the login node)", f.file, dir.string(), name);
    } else {
      fs::path lock = datasets_cache() / ".locks" / name / (std::string(f.file) + ".lock");
      // Lock files stay (as huggingface_hub's do): removing one could let a
      // third fetch lock a new file while a second still waits on the old.
      download_checked(base + "/" + f.file, dest, lock, "", want, fmt::format("{}/{}", name, f.file), "");
    }
    out.push_back(dest);
  }
  return out;
}

}  // namespace hpcbench::hub
