#pragma once
// The tests read what they wrote or were given through the program's one
// reader (core/bounded_read.h), with a limit no test file comes near.
#include <filesystem>
#include <string>

#include "core/bounded_read.h"

namespace hpcbench {

inline std::string read_file(const std::filesystem::path& path) { return read_file(path, 4 * kGiB); }

}  // namespace hpcbench
