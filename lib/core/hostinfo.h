#pragma once
#include <string>
#include <utility>
#include <vector>

namespace hpcbench {

std::string hostname();
unsigned hardware_threads();

// Every variable a cluster job's rank layout depends on that is set here:
// SLURM_*, the torchrun set (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ...),
// and the NCCL_/GLOO_/CUDA_/OMP_ knobs. Sorted by name.
std::vector<std::pair<std::string, std::string>> job_environment();

// Resident set size of this process at its peak, in bytes (Linux).
size_t peak_rss_bytes();
// This process's resident memory that no other process shares, in bytes
// (/proc/self/statm: resident less the file-backed and shared pages). Ranks
// on one node share LibTorch's mapped libraries through the page cache, so
// this, not the whole resident set, is what each rank adds; it also does not
// move with how much of those libraries happens to be cached (fault-around
// maps cached pages into the resident set: 354 MiB against 413 MiB for the
// same binary, depending on the page cache).
size_t current_private_bytes();

}  // namespace hpcbench
