#pragma once
// Reading a file whose size nobody promised: a results file, a cache, a
// measurement from another run. Only a regular file is read (a link to
// /dev/zero, a FIFO or a folder is refused before a byte is read, and
// opening never waits for a FIFO's writer), and never more than a limit,
// so that a hostile or broken file costs an error message, not the memory
// of the process.
#include <cstddef>
#include <filesystem>
#include <string>

namespace hpcbench {

inline constexpr size_t kMiB = size_t{1} << 20;

// The whole of `path`, at most `max_bytes` of it. Throws UserError saying
// why not (not naming the path: callers say which file and what it was for):
// no such file, a loop of symbolic links, not a regular file, larger than
// the limit, or a read error.
std::string read_file_bounded(const std::filesystem::path& path, size_t max_bytes);

}  // namespace hpcbench
