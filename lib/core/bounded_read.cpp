#include "core/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace hpcbench {

namespace {

std::string size_text(size_t bytes) {
  return bytes >= kMiB ? fmt::format("{} MiB", bytes / kMiB) : fmt::format("{} bytes", bytes);
}

}  // namespace

std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) fail("a loop of symbolic links (ELOOP)");
    fail("cannot open it: {}", std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot stat it: {}", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("a folder, not a file");
  if (!S_ISREG(st.st_mode))
    fail("not a regular file (a device, FIFO or socket{}); not read", S_ISCHR(st.st_mode) ? ", such as /dev/zero" : "");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    fail("{} large, more than the {} such a file can be; not read", size_text(static_cast<size_t>(st.st_size)),
         size_text(max_bytes));
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t have = 0;
  // A file that grows while it is read is read up to the limit, then refused.
  for (;;) {
    if (have == out.size()) {
      if (out.size() > max_bytes) fail("grew past the {} such a file can be while it was read", size_text(max_bytes));
      out.resize(std::min(max_bytes + 1, std::max<size_t>(out.size() * 2, 4096)));
      if (have == out.size()) break;
    }
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("read error: {}", std::strerror(errno));
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  if (have > max_bytes) fail("grew past the {} such a file can be while it was read", size_text(max_bytes));
  out.resize(have);
  return out;
}

}  // namespace hpcbench
