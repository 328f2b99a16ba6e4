#pragma once
// An exclusive lock on a file that works on the shared file systems of
// clusters, held for the life of the object. flock first: it is the call
// Python's filelock (huggingface_hub) makes, so the two exclude each other.
// Lustre and GPFS mounted without flock, and some NFS set-ups, answer
// ENOLCK, ENOSYS or EOPNOTSUPP; then fcntl record locks (open-file-description
// locks where the kernel has them, which NFS forwards to the server), and
// where those fail too an exclusive lock file made with O_CREAT|O_EXCL,
// which every file system does atomically. Each fallback is said once per
// process; when nothing works, the error names each errno.
//
// Every wait polls, so that SIGTERM/SIGINT (core/stop_signal.h) end it with
// Interrupted. A lock file whose owner is known to be gone (a process of
// this host that no longer runs), or that is empty for longer than its
// owner needs to write one line (it died, or the disk was full, between
// creating and writing it), is stale and taken over with a warning; one
// held by a live process is waited for as long as it holds it.
//
// Header-only so that the feature cache (lib/data) takes the same lock
// without linking the hub library.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/stop_signal.h"

namespace hpcbench {

// The system calls the lock makes; tests replace them to play a file system
// without flock (ENOLCK) or without any lock at all.
struct LockCalls {
  int (*flock)(int fd, int op) = ::flock;
  int (*fcntl_lock)(int fd, int cmd, struct ::flock* l) = [](int fd, int cmd, struct ::flock* l) {
    return ::fcntl(fd, cmd, l);
  };
  int (*open_exclusive)(const char* path) = [](const char* path) {
    return ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
  };
};
inline LockCalls& lock_calls() {
  static LockCalls calls;
  return calls;
}

// "ENOLCK (No locks available)".
inline std::string errno_text(int e) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* name = ::strerrorname_np(e)) return fmt::format("{} ({})", name, std::strerror(e));
#endif
  return fmt::format("errno {} ({})", e, std::strerror(e));
}

class FileLock {
 public:
  // Seconds after which a lock file that names no owner is stale.
  static constexpr int kEmptyLockStaleS = 10;

  enum class Wait { yes, no };
  enum class Method { none, flock, fcntl, lock_file };

  // `what` says in the waiting message what the lock guards ("another
  // download of the same file"). With Wait::no a lock another process holds
  // leaves held() false instead of waiting.
  FileLock(const std::filesystem::path& path, const std::string& what, Wait wait = Wait::yes) : path_(path) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0664);
    if (fd_ < 0) fail("{}: cannot create the lock file: {}", path.string(), errno_text(errno));
    bool block = wait == Wait::yes;
    int flock_errno = try_flock(what, block);
    if (method_ != Method::none || flock_errno == 0) return;
    announce(said_fcntl(), fmt::format("{}: flock is not supported on this file system ({}); using fcntl locks "
                                       "instead", path.parent_path().string(), errno_text(flock_errno)));
    int fcntl_errno = try_fcntl(what, block);
    if (method_ != Method::none || fcntl_errno == 0) return;
    announce(said_file(), fmt::format("{}: neither flock ({}) nor fcntl locks ({}) work on this file system; "
                                      "using lock files ({}.excl) instead", path.parent_path().string(),
                                      errno_text(flock_errno), errno_text(fcntl_errno), path.filename().string()));
    int file_errno = try_lock_file(what, block);
    if (method_ != Method::none || file_errno == 0) return;
    ::close(fd_);
    fd_ = -1;
    fail("{}: cannot lock: flock {}, fcntl {}, exclusive lock file {}; put the cache on a file system that "
         "supports one of them (HF_HOME, HPCBENCH_DATASETS_CACHE, XDG_CACHE_HOME)",
         path.string(), errno_text(flock_errno), errno_text(fcntl_errno), errno_text(file_errno));
  }
  ~FileLock() {
    if (method_ == Method::lock_file) ::unlink(excl_path().c_str());
    if (fd_ >= 0) ::close(fd_);  // releases flock and fcntl locks
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return method_ != Method::none; }
  // Lets a test see the fallbacks said again.
  static void forget_notices() {
    said_fcntl() = false;
    said_file() = false;
  }
  Method method() const { return method_; }

 private:
  static std::atomic<bool>& said_fcntl() {
    static std::atomic<bool> said{false};
    return said;
  }
  static std::atomic<bool>& said_file() {
    static std::atomic<bool> said{false};
    return said;
  }
  static void announce(std::atomic<bool>& said, const std::string& message) {
    if (!said.exchange(true)) spdlog::warn("{}", message);
  }
  static bool unsupported(int e) { return e == ENOLCK || e == ENOSYS || e == EOPNOTSUPP || e == EINVAL; }
  std::string excl_path() const { return path_.string() + ".excl"; }

  // Each returns 0 when it settled the matter (locked, or busy under
  // Wait::no), or the errno that says the file system does not do it; any
  // other failure is thrown.
  int try_flock(const std::string& what, bool block) {
    auto& calls = lock_calls();
    if (calls.flock(fd_, LOCK_EX | LOCK_NB) == 0) return locked(Method::flock);
    int e = errno;
    if (e != EWOULDBLOCK) return unsupported(e) ? e : thrown("flock", e);
    if (!block) return 0;
    spdlog::info("waiting for {} (lock {})", what, path_.string());
    for (;;) {
      wait_a_moment(what);
      if (calls.flock(fd_, LOCK_EX | LOCK_NB) == 0) return locked(Method::flock);
      if (errno == EWOULDBLOCK || errno == EINTR) continue;
      return unsupported(errno) ? errno : thrown("flock", errno);
    }
  }

  int try_fcntl(const std::string& what, bool block) {
    auto& calls = lock_calls();
    struct ::flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    int set = F_OFD_SETLK, set_wait = F_OFD_SETLKW;
    int r = calls.fcntl_lock(fd_, set, &l);
    if (r != 0 && errno == EINVAL) {  // a kernel without open-file-description locks
      set = F_SETLK, set_wait = F_SETLKW;
      l = {};
      l.l_type = F_WRLCK;
      l.l_whence = SEEK_SET;
      r = calls.fcntl_lock(fd_, set, &l);
    }
    if (r == 0) return locked(Method::fcntl);
    int e = errno;
    if (e != EAGAIN && e != EACCES) return unsupported(e) ? e : thrown("fcntl", e);
    if (!block) return 0;
    spdlog::info("waiting for {} (lock {})", what, path_.string());
    (void)set_wait;
    for (;;) {
      wait_a_moment(what);
      if (calls.fcntl_lock(fd_, set, &l) == 0) return locked(Method::fcntl);
      if (errno == EAGAIN || errno == EACCES || errno == EINTR) continue;
      return unsupported(errno) ? errno : thrown("fcntl", errno);
    }
  }

  // <path>.excl holds "<host> <pid>" of its owner; one left by a process of
  // this host that is gone is taken over.
  int try_lock_file(const std::string& what, bool block) {
    auto& calls = lock_calls();
    std::string excl = excl_path(), me = fmt::format("{} {}", host(), ::getpid());
    bool said_waiting = false;
    auto since = std::chrono::steady_clock::now();
    for (;;) {
      int fd = calls.open_exclusive(excl.c_str());
      if (fd >= 0) {
        std::string line = me + "\n";
        ssize_t n = ::write(fd, line.data(), line.size());
        int e = errno;
        if (::close(fd) != 0 && n == static_cast<ssize_t>(line.size())) n = -1, e = errno;
        if (n != static_cast<ssize_t>(line.size())) {
          // An empty lock file would hold every other process off: none is left.
          ::unlink(excl.c_str());
          fail("{}: cannot write the lock file's owner: {}", excl, n < 0 ? errno_text(e) : "short write");
        }
        return locked(Method::lock_file);
      }
      if (errno != EEXIST) return errno;
      std::string owner_host;
      long owner_pid = 0;
      std::istringstream(read_file_or_empty(excl, file_limit::kProc)) >> owner_host >> owner_pid;
      if (owner_host == host() && owner_pid > 0 && ::kill(static_cast<pid_t>(owner_pid), 0) != 0 && errno == ESRCH) {
        spdlog::warn("{}: left by process {} of this host, which is gone; taking it over", excl, owner_pid);
        ::unlink(excl.c_str());
        continue;
      }
      if (owner_host.empty() || owner_pid <= 0) {
        // Its owner writes its line right after creating it: one still
        // without it after kEmptyLockStaleS never will.
        std::error_code ec;
        auto age = std::filesystem::file_time_type::clock::now() - std::filesystem::last_write_time(excl, ec);
        if (!ec && age > std::chrono::seconds(kEmptyLockStaleS)) {
          spdlog::warn("{}: names no owner and is {} s old (its owner died, or the disk was full, before writing "
                       "its name); taking it over as stale",
                       excl, std::chrono::duration_cast<std::chrono::seconds>(age).count());
          ::unlink(excl.c_str());
          continue;
        }
      }
      if (!block) return 0;
      auto waited = std::chrono::steady_clock::now() - since;
      if (!said_waiting || waited > std::chrono::minutes(1)) {
        spdlog::info("waiting for {} (lock file {}, held by {} {}; if that process is gone, remove the file; "
                     "SIGTERM or Ctrl-C stops waiting)",
                     what, excl, owner_host.empty() ? "?" : owner_host, owner_pid);
        said_waiting = true;
        since = std::chrono::steady_clock::now();
      }
      wait_a_moment(what);
    }
  }

  // One poll's pause; a stop signal ends the wait (the constructor throws,
  // so the descriptor is closed here, not by the destructor).
  void wait_a_moment(const std::string& what) {
    if (stop_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stop_signal() == 0) return;
    ::close(fd_);
    fd_ = -1;
    throw_if_stopped(fmt::format("waiting for {} (lock {}); nothing was changed", what, path_.string()));
  }

  int locked(Method m) {
    method_ = m;
    return 0;
  }

  [[noreturn]] int thrown(const char* call, int e) {
    ::close(fd_);
    fd_ = -1;
    fail("{}: cannot lock ({} failed: {})", path_.string(), call, errno_text(e));
  }

  static std::string host() {
    char buf[256] = {};
    ::gethostname(buf, sizeof(buf) - 1);
    return buf;
  }

  std::filesystem::path path_;
  int fd_ = -1;
  Method method_ = Method::none;
};

}  // namespace hpcbench
