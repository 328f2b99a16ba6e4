#pragma once
// Whether a folder can take what a run will write there, found before the
// run rather than after it: a folder and a file with data in it, since a
// full disk still makes empty folders and files.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>

namespace hpcbench {

// The probe's data: one block, enough for a full disk to say so.
inline constexpr int64_t kWriteProbeBytes = 4096;

// An unlinked file of `bytes` in `dir`, its blocks allocated and synced (the
// file system says ENOSPC now, not when the file is written); its descriptor
// (closing it frees the blocks), or -1 with errno set.
int allocated_file(const std::filesystem::path& dir, off_t bytes);

// Makes a hidden folder in `folder` and in it a file of `bytes`, then
// removes both: 0 when that worked, else the errno of the step that failed.
int write_probe(const std::filesystem::path& folder, int64_t bytes = kWriteProbeBytes);

}  // namespace hpcbench
