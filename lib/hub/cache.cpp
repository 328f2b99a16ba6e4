#include "hub/cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/bounded_read.h"
#include "core/error.h"

namespace hpcbench::hub {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

fs::path hf_home() {
  if (auto v = env("HF_HOME"); !v.empty()) return v;
  if (auto v = env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface";
  return fs::path(env("HOME")) / ".cache" / "huggingface";
}

fs::path hub_cache() {
  if (auto v = env("HF_HUB_CACHE"); !v.empty()) return v;
  if (auto v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;  // huggingface_hub's older name
  return hf_home() / "hub";
}

fs::path datasets_cache() {
  if (auto v = env("HPCBENCH_DATASETS_CACHE"); !v.empty()) return v;
  return hub_cache().parent_path() / "hpcbench-datasets";
}

std::string endpoint() {
  auto e = env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string token() {
  if (auto v = trim(env("HF_TOKEN")); !v.empty()) return v;
  fs::path file = env("HF_TOKEN_PATH").empty() ? hf_home() / "token" : fs::path(env("HF_TOKEN_PATH"));
  std::error_code ec;
  if (fs::symlink_status(file, ec).type() == fs::file_type::not_found) return {};
  return trim(read_file(file, file_limit::kSmall));
}

bool offline() {
  auto v = env("HF_HUB_OFFLINE");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string repo_folder(const std::string& repo_id) {
  std::string out = "models--";
  for (char c : repo_id) {
    if (c == '/') out += "--";
    else out += c;
  }
  return out;
}

bool is_commit_hash(const std::string& r) {
  return r.size() == 40 && std::all_of(r.begin(), r.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

bool is_revision(const std::string& r) {
  if (r.empty() || r.size() > 255 || r.find("@{") != std::string::npos || r.back() == '.') return false;
  for (unsigned char c : r)
    if (c < 0x20 || c == 0x7f || std::string_view(" ~^:?*[\\").find(static_cast<char>(c)) != std::string_view::npos)
      return false;
  size_t start = 0;
  while (start <= r.size()) {
    size_t slash = r.find('/', start);
    if (slash == std::string::npos) slash = r.size();
    std::string_view part(r.data() + start, slash - start);
    if (part.empty() || part.front() == '.' || part.ends_with(".lock")) return false;
    start = slash + 1;
  }
  return true;
}

void check_revision(const std::string& revision, const std::string& what) {
  if (!is_revision(revision))
    fail("{}: '{}' is not a branch, tag or commit name (no '..', empty or '.'-led parts, spaces or ~^:?*[\\); "
         "it becomes a path in the cache, so it is refused", what, revision);
}

bool is_repo_id(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.find("..") != std::string::npos) return false;
  int slashes = 0;
  for (char c : name) {
    if (c == '/') ++slashes;
    else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return slashes <= 1 && name.front() != '/' && name.back() != '/' && name.front() != '.' && name.front() != '-';
}

std::optional<fs::path> snapshot_dir(const fs::path& cache, const std::string& repo_id, const std::string& revision) {
  if (!is_revision(revision) || !is_repo_id(repo_id)) return std::nullopt;
  fs::path repo = cache / repo_folder(repo_id);
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    try {
      commit = read_file_bounded(repo / "refs" / revision, file_limit::kSmall);
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError&) {
      return std::nullopt;  // a ref that cannot be read names no snapshot
    }
    commit = trim(commit.substr(0, commit.find('\n')));
    if (!is_commit_hash(commit)) return std::nullopt;
  }
  fs::path dir = repo / "snapshots" / commit;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

}  // namespace hpcbench::hub
