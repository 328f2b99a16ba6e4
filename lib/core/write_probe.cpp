#include "core/write_probe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hpcbench {

int allocated_file(const std::filesystem::path& dir, off_t bytes) {
  std::string name = (dir / ".hpcbench-space-XXXXXX").string();
  int fd = ::mkstemp(name.data());
  if (fd < 0) return -1;
  ::unlink(name.c_str());
  int e = bytes > 0 ? ::posix_fallocate(fd, 0, bytes) : 0;
  if (e == 0 && ::fsync(fd) != 0 && errno != EINVAL) e = errno;
  if (e != 0) {
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int write_probe(const std::filesystem::path& folder, int64_t bytes) {
  std::string probe = (folder / ".hpcbench-probe-XXXXXX").string();
  if (::mkdtemp(probe.data()) == nullptr) return errno;
  int fd = allocated_file(probe, static_cast<off_t>(bytes));
  int e = fd < 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  ::rmdir(probe.c_str());
  return e;
}

}  // namespace hpcbench
