// Built features on disk, so that a training run does not tokenize SQuAD
// again. One file per (SQuAD content, vocabulary, config, train flag, code
// version); only the unpadded prefix of each row is stored, padding is
// rebuilt on load (about a third of the size of the raw arrays). A checksum
// over the whole file, and the range of every token id, type and position,
// are checked on every read: a flipped byte in a cached row would otherwise
// train on silently, or index past the embedding with a message that names
// neither the file nor the cache.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "core/error.h"
#include "data/features.h"
#include "data/squad.h"
#include "data/tokenizer.h"
#include "core/file_lock.h"

namespace hpcbench::data {

namespace {

// Bump whenever build_features or the tokenizer would produce different
// features, so that stale cache files are never read.
constexpr uint64_t kFeatureCodeVersion = 1;
// 02: a checksum of everything before it stands in front of the trailer.
constexpr char kMagic[8] = {'H', 'P', 'C', 'B', 'F', 'T', '0', '2'};
constexpr char kTrailer[8] = {'H', 'P', 'C', 'B', 'E', 'N', 'D', '0'};

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h *= 0xFF51AFD7ED558CCDULL;
  return h ^ (h >> 33);
}

uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  return mix(h, tail);
}

struct Header {
  char magic[8];
  uint64_t key;
  int64_t seq_len;
  uint64_t n;
  uint64_t examples, impossible, mismatched;
  int32_t pad_id;
  int32_t has_offsets;
};

template <typename T>
void put(std::string& out, const T* p, size_t n) {
  out.append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

// Rows whose padding is not exactly what build_features writes cannot be
// stored prefix-only.
size_t row_length(const Features& f, size_t r, int32_t pad_id) {
  const size_t L = static_cast<size_t>(f.seq_len);
  const int32_t* mask = f.attention_mask.data() + r * L;
  size_t len = 0;
  while (len < L && mask[len] == 1) ++len;
  for (size_t i = len; i < L; ++i) {
    bool ok = mask[i] == 0 && f.input_ids[r * L + i] == pad_id && f.token_type_ids[r * L + i] == 0;
    if (ok && !f.offset_begin.empty()) ok = f.offset_begin[r * L + i] == -1 && f.offset_end[r * L + i] == -1;
    if (!ok) return SIZE_MAX;
  }
  return len;
}

std::string serialize(const SquadFeatures& sf, uint64_t key, int32_t pad_id) {
  const Features& f = sf.features;
  const size_t L = static_cast<size_t>(f.seq_len);
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.key = key;
  h.seq_len = f.seq_len;
  h.n = f.size();
  h.examples = sf.examples;
  h.impossible = sf.impossible;
  h.mismatched = sf.mismatched_answers;
  h.pad_id = pad_id;
  h.has_offsets = f.offset_begin.empty() ? 0 : 1;
  std::string out;
  out.reserve(sizeof h + f.size() * (16 + L * 3));
  put(out, &h, 1);
  std::vector<uint8_t> types(L);
  for (size_t r = 0; r < f.size(); ++r) {
    size_t len = row_length(f, r, pad_id);
    if (len == SIZE_MAX) return {};
    int32_t rec[4] = {static_cast<int32_t>(len), f.start_positions[r], f.end_positions[r], f.example_index[r]};
    put(out, rec, 4);
    put(out, f.input_ids.data() + r * L, len);
    for (size_t i = 0; i < len; ++i) types[i] = static_cast<uint8_t>(f.token_type_ids[r * L + i]);
    put(out, types.data(), len);
    if (h.has_offsets) {
      put(out, f.offset_begin.data() + r * L, len);
      put(out, f.offset_end.data() + r * L, len);
    }
  }
  const uint64_t sum = feature_cache_checksum(out);
  put(out, &sum, 1);
  out.append(kTrailer, 8);
  return out;
}

// False when `in` is not a complete cache file for `key` (stale or damaged):
// its checksum, or a token id outside [0, vocab_size), a token type other
// than 0 and 1, a position outside the row.
bool deserialize(std::string_view in, uint64_t key, int64_t vocab_size, SquadFeatures& sf) {
  Header h;
  if (in.size() < sizeof h + 16) return false;
  std::memcpy(&h, in.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0 || h.key != key || h.seq_len <= 0) return false;
  if (std::memcmp(in.data() + in.size() - 8, kTrailer, 8) != 0) return false;
  uint64_t sum = 0;
  std::memcpy(&sum, in.data() + in.size() - 16, 8);
  if (feature_cache_checksum(in.substr(0, in.size() - 16)) != sum) return false;
  const size_t L = static_cast<size_t>(h.seq_len);
  Features& f = sf.features;
  f = Features{};
  f.seq_len = h.seq_len;
  f.input_ids.assign(h.n * L, h.pad_id);
  f.token_type_ids.assign(h.n * L, 0);
  f.attention_mask.assign(h.n * L, 0);
  f.start_positions.resize(h.n);
  f.end_positions.resize(h.n);
  f.example_index.resize(h.n);
  if (h.has_offsets) {
    f.offset_begin.assign(h.n * L, -1);
    f.offset_end.assign(h.n * L, -1);
  }
  size_t pos = sizeof h;
  const size_t limit = in.size() - 16;
  auto take = [&](void* dst, size_t bytes) {
    if (pos + bytes > limit) return false;
    std::memcpy(dst, in.data() + pos, bytes);
    pos += bytes;
    return true;
  };
  for (size_t r = 0; r < h.n; ++r) {
    int32_t rec[4];
    if (!take(rec, sizeof rec)) return false;
    const size_t len = static_cast<size_t>(rec[0]);
    if (rec[0] < 0 || len > L) return false;
    // Positions up to L: the label loop's quirk may point one past the row,
    // which the loss ignores as Hugging Face's does.
    if (rec[1] < 0 || rec[1] > h.seq_len || rec[2] < 0 || rec[2] > h.seq_len || rec[3] < 0 ||
        static_cast<uint64_t>(rec[3]) >= h.examples)
      return false;
    f.start_positions[r] = rec[1];
    f.end_positions[r] = rec[2];
    f.example_index[r] = rec[3];
    if (!take(f.input_ids.data() + r * L, len * 4)) return false;
    for (size_t i = 0; i < len; ++i)
      if (f.input_ids[r * L + i] < 0 || f.input_ids[r * L + i] >= vocab_size) return false;
    if (pos + len > limit) return false;
    for (size_t i = 0; i < len; ++i) {
      const auto type = static_cast<uint8_t>(in[pos + i]);
      if (type > 1) return false;
      f.token_type_ids[r * L + i] = type;
    }
    pos += len;
    std::fill_n(f.attention_mask.data() + r * L, len, 1);
    if (h.has_offsets) {
      if (!take(f.offset_begin.data() + r * L, len * 4)) return false;
      if (!take(f.offset_end.data() + r * L, len * 4)) return false;
    }
  }
  if (pos != limit) return false;
  sf.examples = h.examples;
  sf.impossible = h.impossible;
  sf.mismatched_answers = h.mismatched;
  return true;
}

}  // namespace

uint64_t feature_cache_checksum(std::string_view bytes) { return hash_bytes(bytes); }

std::filesystem::path default_feature_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "hpcbench" / "features";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "hpcbench" / "features";
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec)
    fail("no folder for the feature cache: HOME and XDG_CACHE_HOME are unset and TMPDIR ({}) is no folder ({}); "
         "set one, or give --cache-dir", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "unset", ec.message());
  return tmp / "hpcbench-features";
}

namespace {

// What the cached features depend on: the file's bytes, the vocabulary, the
// windowing, training or evaluation, and the code that builds them.
uint64_t cache_key(const std::string& content, const WordPieceTokenizer& tokenizer, const FeatureConfig& cfg,
                   bool train) {
  uint64_t key = hash_bytes(content);
  key = mix(key, tokenizer.fingerprint());
  key = mix(key, static_cast<uint64_t>(cfg.max_seq_length));
  key = mix(key, static_cast<uint64_t>(cfg.doc_stride));
  key = mix(key, static_cast<uint64_t>(cfg.max_query_length));
  key = mix(key, train ? 1 : 2);
  key = mix(key, kFeatureCodeVersion);
  return key;
}

// Whether the cache holds the file. A loop of symbolic links (the file or
// --cache-dir linked to itself) is no cache this can read or write: said so,
// with what to do, rather than a file system exception.
bool cache_present(const std::filesystem::path& file) {
  if (file.empty()) return false;
  std::error_code ec;
  const bool there = std::filesystem::exists(file, ec);
  if (ec && ec.value() == ELOOP)
    fail("feature cache {}: a loop of symbolic links (the file or the folder is linked to itself); remove it, or "
         "give another --cache-dir (or --cache-dir none)",
         file.string());
  return there && !ec;
}

// The features of `squad` from the cache file into sf; false (sf empty) when
// the file is absent, damaged or stale.
bool read_cache(const std::filesystem::path& file, uint64_t key, const WordPieceTokenizer& tokenizer,
                const std::filesystem::path& squad, SquadFeatures& sf) {
  if (!cache_present(file)) return false;
  std::string bytes;
  try {
    // The largest cache (SQuAD's training set at 512 tokens) is well under this.
    bytes = read_file_bounded(file, size_t{8} << 30);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    spdlog::warn("feature cache {}: {}; rebuilding", file.string(), e.what());
  }
  if (!bytes.empty() && deserialize(bytes, key, tokenizer.vocab_size(), sf)) {
    sf.from_cache = true;
    sf.cache_file = file;
    spdlog::info("feature cache hit: {} ({} features for {})", file.string(), sf.features.size(), squad.string());
    // The parse that counted them warned when the features were built;
    // a run from the cache must say so too.
    if (sf.mismatched_answers > 0)
      spdlog::warn("{}: {} answer(s) whose text is not at answer_start in the context were left out",
                   squad.string(), sf.mismatched_answers);
    return true;
  }
  if (!bytes.empty())
    spdlog::warn("feature cache: {} is damaged or stale (its checksum, or a token id, type or position out of "
                 "range); rebuilding it from {}",
                 file.string(), squad.string());
  sf = SquadFeatures{};
  return false;
}

// The built features into the cache (a failure to write is a warning: the
// run goes on without the cache).
void write_cache(const std::filesystem::path& file, uint64_t key, const WordPieceTokenizer& tokenizer,
                 const std::filesystem::path& squad, SquadFeatures& sf) {
  std::string bytes = serialize(sf, key, tokenizer.pad_id());
  if (bytes.empty()) {
    spdlog::warn("feature cache: features of {} are not in the padded layout; not cached", squad.string());
    return;
  }
  try {
    write_file_atomic(file, bytes);
    sf.cache_file = file;
    spdlog::info("feature cache: wrote {} ({:.1f} MB)", file.string(), bytes.size() / 1e6);
  } catch (const UserError& e) {
    spdlog::warn("feature cache not written: {}", e.what());
  }
}

}  // namespace

SquadFeatures load_or_build_squad_features(const std::filesystem::path& squad, const std::filesystem::path& vocab,
                                           const FeatureConfig& cfg, bool train,
                                           const std::filesystem::path& cache_dir) {
  validate(cfg);
  auto t0 = std::chrono::steady_clock::now();
  auto tokenizer = WordPieceTokenizer::from_file(vocab);
  const std::string content = read_file(squad, file_limit::kDataset);
  const uint64_t key = cache_key(content, tokenizer, cfg, train);
  const std::filesystem::path file =
      cache_dir.empty() ? std::filesystem::path() : cache_dir / fmt::format("{:016x}.bin", key);

  SquadFeatures sf;
  const bool existed = cache_present(file);
  if (read_cache(file, key, tokenizer, squad, sf)) return sf;
  // Concurrent builders of one file (the ranks of a job, jobs sharing a
  // cache): one builds, the others wait and read what it wrote. A cache on a
  // file system where no lock works is still used, only without that.
  std::optional<FileLock> lock;
  if (!file.empty()) {
    try {
      // Beside the files, not among them, as the hub cache keeps its .locks/.
      lock.emplace(cache_dir / ".locks" / (file.filename().string() + ".lock"),
                   "another process building the same features");
      // Written while this process waited (a damaged file was said above).
      if (!existed && read_cache(file, key, tokenizer, squad, sf)) return sf;
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError& e) {
      spdlog::warn("feature cache: {}; building without the lock", e.what());
    }
  }

  // The bytes that were hashed are the bytes parsed: a file changed between
  // two reads cannot be cached under the wrong key.
  SquadDataset ds = parse_squad(content, squad.string());
  sf.examples = ds.examples.size();
  sf.mismatched_answers = ds.mismatched_answers;
  for (auto& ex : ds.examples) sf.impossible += ex.is_impossible;
  sf.features = build_features(ds.examples, tokenizer, cfg, train);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("built {} features from {} questions of {} in {:.2f} s", sf.features.size(), sf.examples,
               squad.string(), secs);
  if (!file.empty()) write_cache(file, key, tokenizer, squad, sf);
  return sf;
}

Features load_or_build_features(const std::filesystem::path& squad, const std::filesystem::path& vocab,
                                const FeatureConfig& cfg, bool train, const std::filesystem::path& cache_dir) {
  return load_or_build_squad_features(squad, vocab, cfg, train, cache_dir).features;
}

}  // namespace hpcbench::data
