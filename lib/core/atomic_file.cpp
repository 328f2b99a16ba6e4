#include "core/atomic_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace hpcbench {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  namespace fs = std::filesystem;
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) fail("cannot create directory {}: {}", path.parent_path().string(), ec.message());
  }
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write {}: {}", path.string(), std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write {}: {}", path.string(), std::strerror(e));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot write {}: {}", path.string(), std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail("cannot write {}: {}", path.string(), std::strerror(e));
  }
}

void remove_tree(const std::filesystem::path& path) noexcept {
  auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); };
  ::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace hpcbench
