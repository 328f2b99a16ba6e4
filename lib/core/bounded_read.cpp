#include "core/bounded_read.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/injection.h"
#include "core/stop_signal.h"

namespace hpcbench {

namespace {

// Between two polls of the stop signals: a checkpoint on a slow shared file
// system takes minutes, a chunk a fraction of a second even at 100 MB/s.
constexpr size_t kChunk = 8 * kMiB;

// How many ReadsRunToTheirEnd live.
std::atomic<int> g_reads_run_to_end{0};

// HPCBENCH_INJECT's stop_read=<name>:<TERM|INT|USR1>: before the first chunk
// of a file called <name>, this process sends itself that signal once, as a
// time limit that comes while the file is read (deterministic, where a
// signal from outside must be timed into the read).
std::atomic<bool> g_stop_read_sent{false};

void send_injected_stop(const std::string& path) {
  const char* env = std::getenv(kInjectVariable);
  if (!env || !*env || g_stop_read_sent.load()) return;
  auto spec = injected("stop_read");
  if (!spec) return;
  const auto colon = spec->rfind(':');
  const std::string name = colon == std::string::npos ? "" : spec->substr(0, colon);
  const std::string sig = colon == std::string::npos ? "" : spec->substr(colon + 1);
  if (name.empty() || (sig != "TERM" && sig != "INT" && sig != "USR1"))
    fail("{} stop_read={}: expected <file name>:<TERM|INT|USR1>", kInjectVariable, *spec);
  if (name != std::filesystem::path(path).filename().string() || g_stop_read_sent.exchange(true)) return;
  const int number = sig == "TERM" ? SIGTERM : sig == "INT" ? SIGINT : SIGUSR1;
  std::fprintf(stderr, "%s stop_read: %s sends itself %s before its first chunk\n", kInjectVariable, path.c_str(),
               signal_name(number).c_str());
  ::raise(number);
}

std::string size_text(uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  return bytes >= kMiB ? fmt::format("{} MiB", bytes / kMiB) : fmt::format("{} bytes", bytes);
}

[[noreturn]] void fail_errno(int err, const char* doing) {
  if (err == ENOENT) fail("no such file");
  if (err == ELOOP) fail("a loop of symbolic links (ELOOP)");
  if (err == ENOTDIR) fail("a part of the path is not a folder");
  fail("cannot {} it: {}", doing, std::strerror(err));
}

void check_kind(const struct stat& st, uint64_t max_bytes) {
  if (S_ISDIR(st.st_mode)) fail("a folder, not a file");
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISCHR(st.st_mode)    ? "a character device, such as /dev/zero"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "something else";
    fail("not a regular file ({}); not read", what);
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    fail("{} large, more than the {} such a file can be; not read", size_text(static_cast<uint64_t>(st.st_size)),
         size_text(max_bytes));
}

}  // namespace

ReadableFile::ReadableFile(int fd, uint64_t size, std::string name)
    : fd_(fd), size_(size), name_(std::move(name)), stoppable_(size > kChunk && stop_signal() == 0) {}

ReadableFile::ReadableFile(ReadableFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      size_(o.size_),
      name_(std::move(o.name_)),
      stoppable_(o.stoppable_),
      delay_ms_(o.delay_ms_),
      delay_said_(o.delay_said_) {}

ReadableFile::~ReadableFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadableFile::before_chunk() {
  send_injected_stop(name_);
  if (delay_ms_) {
    if (!delay_said_)
      std::fprintf(stderr, "%s slow_read: %s waits %llu ms before each chunk\n", kInjectVariable, name_.c_str(),
                   static_cast<unsigned long long>(*delay_ms_));
    delay_said_ = true;
    // Not a wait that polls: what ends the read must be the poll below.
    std::this_thread::sleep_for(std::chrono::milliseconds(*delay_ms_));
  }
  if (!stoppable_ || g_reads_run_to_end.load() > 0) return;
  if (const int sig = stop_signal())
    throw Interrupted(sig, fmt::format("interrupted by {} while reading {}; not read further", signal_name(sig),
                                       name_.empty() ? std::string("a file") : name_));
}

size_t ReadableFile::read_some(char* out, size_t n) {
  before_chunk();
  for (;;) {
    const ssize_t got = ::read(fd_, out, std::min(n, kChunk));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) fail("read error: {}", std::strerror(errno));
  }
}

bool ReadableFile::read_at(uint64_t offset, char* out, size_t n) {
  while (n > 0) {
    before_chunk();
    const ssize_t got = ::pread(fd_, out, std::min(n, kChunk), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read error: {}", std::strerror(errno));
    if (got == 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

ReadsRunToTheirEnd::ReadsRunToTheirEnd() { g_reads_run_to_end.fetch_add(1); }
ReadsRunToTheirEnd::~ReadsRunToTheirEnd() { g_reads_run_to_end.fetch_sub(1); }

ReadableFile open_regular_file(const std::filesystem::path& path, size_t max_bytes) {
  // Looked at before it is opened: opening a device can have effects of its
  // own, and a FIFO's open would wait for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail_errno(errno, "look at");
  check_kind(st, max_bytes);
  // O_NONBLOCK still, for a path swapped for a FIFO between the two calls.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, "open");
  ReadableFile guard(fd, 0);  // closes it if a check below fails
  if (::fstat(fd, &st) != 0) fail("cannot stat it: {}", std::strerror(errno));
  check_kind(st, max_bytes);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  ReadableFile file(guard.release(), static_cast<uint64_t>(st.st_size), path.string());
  file.delay_ms_ = injected_read_delay_ms(path.filename().string());
  return file;
}

std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes) {
  ReadableFile file = open_regular_file(path, max_bytes);
  std::string out(static_cast<size_t>(file.size()), '\0');
  size_t have = 0;
  while (have < out.size()) {
    const size_t n = file.read_some(out.data() + have, out.size() - have);
    if (n == 0) break;  // it shrank
    have += n;
  }
  out.resize(have);
  // What the size did not promise: files of /proc say 0 bytes and have more,
  // and a file may grow while it is read. Read up to the limit, then refused.
  char more[64 * 1024];
  for (size_t n; (n = file.read_some(more, sizeof more)) > 0;) {
    if (out.size() + n > max_bytes)
      fail("grew past the {} such a file can be while it was read", size_text(max_bytes));
    out.append(more, n);
  }
  return out;
}

std::string read_file(const std::filesystem::path& path, size_t max_bytes) {
  try {
    return read_file_bounded(path, max_bytes);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("cannot read {}: {}", path.string(), e.what());
  }
}

std::string read_flag_file(const std::string& flag, const std::filesystem::path& path, size_t max_bytes) {
  try {
    return read_file_bounded(path, max_bytes);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("{} {}: {}", flag, path.string(), e.what());
  }
}

std::string read_file_or_empty(const std::filesystem::path& path, size_t max_bytes) {
  try {
    return read_file_bounded(path, max_bytes);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError&) {
    return {};
  }
}

}  // namespace hpcbench
