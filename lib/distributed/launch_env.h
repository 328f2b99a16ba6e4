#pragma once
// Where this process sits in a job: its rank, the world, and where rank 0's
// rendezvous store listens. Read from SLURM (srun), from torchrun's variables
// (also set by our local launcher), or a single process. The functions take an
// environment map so that tests can feed fake environments.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench::dist {

using EnvMap = std::map<std::string, std::string>;

struct RankLayout {
  std::string source = "single";  // "slurm", "torchrun" or "single"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  int num_nodes = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::vector<std::string> hosts;  // SLURM only: the step's hosts, in order
};

// The environment of this process.
EnvMap current_environment();

// 20000 + job id % 20000: two jobs sharing a node get different ports
// without anyone choosing one. Throws UserError when the id is not a number.
int default_port_for_job(std::string_view job_id);

// torchrun's RANK/WORLD_SIZE win over SLURM's (torchrun or our launcher inside
// an allocation sets them for each worker); SLURM counts only inside a job
// step (srun), not in the batch script itself. MASTER_ADDR / MASTER_PORT
// override the rendezvous in both. Throws UserError naming the variable for
// anything missing or inconsistent.
using HostlistResolver = std::function<std::vector<std::string>(std::string_view)>;
RankLayout detect_layout(const EnvMap& env, const HostlistResolver& resolve_hosts);
RankLayout detect_layout(const EnvMap& env);  // built-in host list expansion
RankLayout detect_layout();                   // this process, scontrol when present

// What a run asked for against what the job provides; 0 means "not asked".
// `visible_devices` is the number of accelerators this process sees (only
// checked when `uses_accelerator`). Fails with a UserError that says what to
// change before any collective starts.
struct LayoutRequest {
  int nodes = 0;
  int gpus_per_node = 0;
  bool uses_accelerator = false;
  int visible_devices = 0;
  // CUDA_VISIBLE_DEVICES names exactly one device: a launcher bound this
  // rank to its GPU (SLURM's binding is recognised without it).
  bool bound_by_visible_devices = false;
  // --allow-shared-gpu: ranks may share the visible GPUs (Gloo only).
  bool shared_devices = false;
};
void check_layout(const RankLayout& layout, const LayoutRequest& request);

// The accelerator index this rank uses: its local rank when the node's GPUs
// are all visible, 0 when the job binds one GPU per task (SLURM, or a
// launcher's per-rank CUDA_VISIBLE_DEVICES: `bound`), local rank modulo the
// visible GPUs when they may be `shared`, -1 otherwise.
int device_index_for(const RankLayout& layout, int visible_devices, bool bound = false, bool shared = false);

// Whether CUDA_VISIBLE_DEVICES in `env` names exactly one device.
bool one_visible_device_named(const EnvMap& env);

std::string describe(const RankLayout& layout);

}  // namespace hpcbench::dist
