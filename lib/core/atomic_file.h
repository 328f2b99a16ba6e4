#pragma once
#include <filesystem>
#include <string_view>

namespace hpcbench {

// Writes `content` to `path` so that readers see either the old file or the
// whole new one, never a half-written file: write a sibling temporary, fsync,
// rename. Throws UserError naming the path on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Removes a folder and everything below it; missing is fine. Use this, not
// std::filesystem::remove_all: the torch wheel's libtorch.so exports its own
// std::filesystem symbols, and in binaries linked with it remove_all resolves
// to that copy and crashes.
void remove_tree(const std::filesystem::path& path) noexcept;

}  // namespace hpcbench
