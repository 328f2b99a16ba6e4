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

// Resident set size of this process now and at its peak, in bytes (Linux /proc).
size_t current_rss_bytes();
size_t peak_rss_bytes();

}  // namespace hpcbench
