#pragma once
// The one way this program reads a file: a configuration, a model's
// config.json, a vocabulary, a checkpoint, SQuAD data, a manifest, a run
// record, a hub file, a file of /proc. Only a regular file is read: the path
// is looked at before it is opened (a link to /dev/zero, a FIFO, a socket or
// a folder is refused without opening it, and the open itself never waits
// for a FIFO's writer), links are followed and a loop of them is named as
// one, and never more than a limit that fits the kind of file, so that a
// hostile or broken file costs an error message, not the memory of the
// process nor a hang. A stop signal that comes while a file is read ends
// the read at the next chunk (a few MiB), so that a time limit during a
// checkpoint's read on a slow file system ends the process, not the read.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace hpcbench {

inline constexpr size_t kMiB = size_t{1} << 20;
inline constexpr size_t kGiB = size_t{1} << 30;

// How large a file of each kind can be (the largest real one, with room).
namespace file_limit {
// A TOML configuration, a model's config.json, a system description.
inline constexpr size_t kConfig = 16 * kMiB;
// A WordPiece vocab.txt (bert's is 226 KiB; multilingual ones a few MiB).
inline constexpr size_t kVocabulary = 64 * kMiB;
// SQuAD-shaped JSON (SQuAD 2.0's train set is 40 MiB).
inline constexpr size_t kDataset = 4 * kGiB;
// Model weights (bert-large in fp32 is 1.3 GiB).
inline constexpr size_t kCheckpoint = 64 * kGiB;
// A sweep manifest, a hub's ref or metadata file, a log, predictions.
inline constexpr size_t kSmall = 64 * kMiB;
// A file of /proc or /sys.
inline constexpr size_t kProc = 4 * kMiB;
}  // namespace file_limit

// A file open for reading that passed the checks: regular, at most the
// limit. A file of more than one chunk (8 MiB) is read in chunks, and before
// each a stop signal that came since it was opened throws Interrupted naming
// the file. One that came before does not (a stopped run still reads what
// its results need), nor is a smaller file cut short: it is read in an
// instant, by threads too (the sampler's /proc reads), where an exception
// would end the process. Closes itself.
class ReadableFile {
 public:
  ReadableFile(int fd, uint64_t size, std::string name = {});
  ~ReadableFile();
  ReadableFile(ReadableFile&& o) noexcept;
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;
  ReadableFile& operator=(ReadableFile&&) = delete;
  int fd() const { return fd_; }
  // Gives the descriptor up to the caller, who closes it.
  int release() { return std::exchange(fd_, -1); }
  // The size the file had when it was opened (0 for most files of /proc).
  uint64_t size() const { return size_; }
  // Up to `n` bytes into `out`; 0 at the end. Throws UserError on a read error.
  size_t read_some(char* out, size_t n);
  // Exactly `n` bytes at `offset` into `out`; false when the file ends first.
  bool read_at(uint64_t offset, char* out, size_t n);

 private:
  friend ReadableFile open_regular_file(const std::filesystem::path& path, size_t max_bytes);
  void before_chunk();

  int fd_;
  uint64_t size_;
  std::string name_;
  bool stoppable_;
  std::optional<uint64_t> delay_ms_;  // HPCBENCH_INJECT's slow_read for this file
  bool delay_said_ = false;
};

// While one lives, a stop signal does not end a read: a run's results are
// being written, and the files they take (TensorBoard's events) are read
// whole whatever comes.
class ReadsRunToTheirEnd {
 public:
  ReadsRunToTheirEnd();
  ~ReadsRunToTheirEnd();
  ReadsRunToTheirEnd(const ReadsRunToTheirEnd&) = delete;
  ReadsRunToTheirEnd& operator=(const ReadsRunToTheirEnd&) = delete;
};

// Opens `path` for a reader that streams it (a hash, a safetensors file).
// Throws UserError saying why not, without naming the path (callers say
// which file and what it was for): no such file, a loop of symbolic links,
// a folder, not a regular file, larger than `max_bytes`, no permission.
ReadableFile open_regular_file(const std::filesystem::path& path, size_t max_bytes);

// The whole of `path`, at most `max_bytes` of it (a file that grows past the
// limit while it is read is refused). Errors as open_regular_file's.
std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes);

// The same, with the error naming the path: "cannot read <path>: <why>".
std::string read_file(const std::filesystem::path& path, size_t max_bytes);

// The same, with the error naming the flag that gave the path: "<flag>
// <path>: <why>" (--config, --system, --engine-ratios).
std::string read_flag_file(const std::string& flag, const std::filesystem::path& path, size_t max_bytes);

// The same, or "" when it cannot be read: for a fact that may be absent (a
// file of /proc another kernel lacks, a lock file whose owner is writing it).
std::string read_file_or_empty(const std::filesystem::path& path, size_t max_bytes);

}  // namespace hpcbench
