#pragma once
// The hub's ETag of a file that is not in LFS: git's blob id, the SHA-1 of
// "blob <size>\0" and the bytes. Checking it is what tells a small file
// (config.json, vocab.txt) served whole from one served with bytes more or
// less, which a size taken from the same server cannot.
#include <filesystem>
#include <string>

namespace hpcbench::hub {

// Lower-case hex git blob id of a whole file; throws UserError naming it
// when it cannot be read.
std::string git_blob_sha1_file(const std::filesystem::path& path);

// Whether `etag` has the form of a git blob id (40 lower-case hex digits).
bool is_git_blob_id(const std::string& etag);

}  // namespace hpcbench::hub
