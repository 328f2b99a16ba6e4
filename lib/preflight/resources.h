#pragma once
// The node's cores and memory against what the ranks will ask of them,
// before any rank starts. Ranks x threads beyond the cores is a warning (the
// run works, but its figures measure the sharing); memory that even a lower
// bound of the ranks' needs exceeds is refused, instead of a rank killed by
// the kernel part-way through the run.
#include <cstddef>
#include <filesystem>
#include <string>

#include "specs/spec.h"
#include "train/config.h"

namespace hpcbench::preflight {

// CPUs this process may run on: its affinity mask, fewer under the
// tightest CPU quota of its own cgroup and those above it (cpu_quota_at),
// at least 1.
int usable_cores();

// The tightest CPU quota, in cores, of the process whose /proc/<pid>/cgroup
// is `self_cgroup_file`: its own cgroup's and each one's above it, cgroup
// v2's cpu.max (<root>/<path>) and v1's cpu.cfs_quota_us over
// cpu.cfs_period_us (<root>/cpu/<path>); -1 where none sets one. `source`
// receives the file that set it.
double cpu_quota_at(const std::filesystem::path& cgroup_root, const std::filesystem::path& self_cgroup_file,
                    std::string* source = nullptr);
// `cores` (an affinity mask's count) under that quota, rounded up (1.5
// cores run two threads part of the time), at least 1.
int usable_cores_at(int cores, const std::filesystem::path& cgroup_root, const std::filesystem::path& self_cgroup_file);

// The CPUs the job has on this node: SLURM_CPUS_ON_NODE inside a SLURM job
// (each task may be bound to its own share, which says nothing of the
// node), else usable_cores(), which every rank of the built-in launcher
// shares.
int node_cores();

// Memory the node can still give, in bytes, and where the figure comes from
// ("MemAvailable", cgroup v2's memory.max or v1's memory.limit_in_bytes, or
// the injected memory_bytes, core/injection.h).
size_t available_memory(std::string* source = nullptr);

// The same from the given files, without the injected figure: `meminfo_file` as
// /proc/meminfo, `cgroup_root` as /sys/fs/cgroup (cgroup v2's memory.max and
// memory.current there, cgroup v1's memory/memory.limit_in_bytes and
// memory/memory.usage_in_bytes); the lowest of what they leave. 0: none says.
size_t available_memory_at(const std::filesystem::path& meminfo_file, const std::filesystem::path& cgroup_root,
                           std::string* source = nullptr);
// The same for the process whose /proc/<pid>/cgroup is `self_cgroup_file`:
// its own cgroup's limit and each one's above it (v2: <root>/<path>; v1:
// <root>/memory/<path>), the least any leaves, where the file's root-level
// form reads only the top.
size_t available_memory_at(const std::filesystem::path& meminfo_file, const std::filesystem::path& cgroup_root,
                           const std::filesystem::path& self_cgroup_file, std::string* source = nullptr);

// ranks x threads_per_rank against `cores`: a warning line, or "" when the
// cores suffice. `ranks_flag` names how the ranks were asked for.
std::string core_warning(int ranks, int threads_per_rank, int cores, const std::string& ranks_flag);

// A lower bound of one rank's memory, in bytes: the model state the
// strategy's memory model gives (its spec's `memory`: parameters, gradients,
// Adam's moments, a sharded strategy's working set) where the ranks compute on
// the host, the runtime (this process's private memory now: LibTorch loaded, nothing
// built; the libraries it maps are shared between the ranks)
// and the training features where they are known (synthetic data).
struct RankMemory {
  double model_state = 0;  // 0 on an accelerator: it is in device memory
  double runtime = 0;
  double features = 0;
  double total() const { return model_state + runtime + features; }
};
RankMemory rank_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int world_size,
                       int ranks_per_node, bool on_accelerator);

// The memory model's bytes of model state on one rank (what the strategy's
// topology says once it is set up).
double model_state_per_rank(const train::TrainConfig& cfg, const strategies::Choice& strategy,
                            int world_size, int ranks_per_node);

// Refuses (UserError naming `ranks_flag`) `ranks` ranks on this node whose
// lower bound together exceeds the memory available.
void check_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int ranks,
                  int world_size, bool on_accelerator, const std::string& ranks_flag);

// A lower bound on what a captured step's private memory pool keeps for the
// whole run (docs/memory.md, "What is not counted"): the activations one
// micro-batch's layers keep for backward live in it between replays (the
// next micro-batch reuses the blocks), as specs/model_shape.h counts them
// with fused attention (no s² scores), the split terms over `split`
// tensor-parallel ranks. Workspaces, autocast's weight copies and
// fragmentation come on top, measured rather than modelled.
double graph_pool_bytes(const train::TrainConfig& cfg, int64_t split = 1);

// One rank's model state, and under a CUDA graph its pool's lower bound,
// against its accelerator's memory (`device_bytes`, 0: unknown). Throws
// UserError when it cannot fit.
void check_device_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int world_size,
                         int ranks_per_node, size_t device_bytes, const std::string& device_name);

}  // namespace hpcbench::preflight
