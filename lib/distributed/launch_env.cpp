#include "distributed/launch_env.h"

#include <unistd.h>

#include <charconv>

#include "core/error.h"
#include "core/split.h"
#include "distributed/hostlist.h"

extern char** environ;

namespace hpcbench::dist {

namespace {

const std::string* find(const EnvMap& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

long long parse_int(const EnvMap& env, const std::string& key, long long min_value) {
  const std::string& s = env.at(key);
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail("environment variable {}='{}' is not an integer", key, s);
  if (v < min_value) fail("environment variable {}={} must be at least {}", key, v, min_value);
  return v;
}

int get_int(const EnvMap& env, const std::string& key, int fallback, int min_value = 0) {
  if (!find(env, key)) return fallback;
  long long v = parse_int(env, key, min_value);
  if (v > 1'000'000'000) fail("environment variable {}={} is out of range", key, v);
  return static_cast<int>(v);
}

const std::string* first_of(const EnvMap& env, std::initializer_list<const char*> keys,
                            std::string* which = nullptr) {
  for (const char* k : keys)
    if (auto v = find(env, k)) {
      if (which) *which = k;
      return v;
    }
  return nullptr;
}

// SLURM_STEP_TASKS_PER_NODE looks like "4(x2),3": tasks on each node in order.
std::vector<int> tasks_per_node(const std::string& spec) {
  std::vector<int> out;
  if (spec.empty()) return out;
  for (auto& item : split(spec)) {
    int count = 0, repeat = 1;
    if (std::sscanf(item.c_str(), "%d(x%d)", &count, &repeat) < 1 || count < 1 || repeat < 1)
      fail("SLURM_STEP_TASKS_PER_NODE='{}' is not in SLURM's form (e.g. '4(x2),3')", spec);
    out.insert(out.end(), static_cast<size_t>(repeat), count);
  }
  return out;
}

void apply_overrides(const EnvMap& env, RankLayout& l) {
  if (auto a = find(env, "MASTER_ADDR")) l.master_addr = *a;
  if (find(env, "MASTER_PORT")) {
    long long p = parse_int(env, "MASTER_PORT", 1);
    if (p > 65535) fail("MASTER_PORT={} is not a TCP port (1-65535)", p);
    l.master_port = static_cast<int>(p);
  }
}

void check_ranks(const RankLayout& l, const char* rank_var, const char* world_var,
                 const char* local_var) {
  if (l.rank >= l.world_size)
    fail("{}={} is not below {}={}", rank_var, l.rank, world_var, l.world_size);
  if (l.local_rank >= l.local_world_size)
    fail("{}={} is not below the {} tasks on this node", local_var, l.local_rank, l.local_world_size);
}

RankLayout from_torchrun(const EnvMap& env) {
  if (!find(env, "RANK") || !find(env, "WORLD_SIZE"))
    fail("RANK and WORLD_SIZE must be set together (found only {})",
         find(env, "RANK") ? "RANK" : "WORLD_SIZE");
  RankLayout l;
  l.source = "torchrun";
  l.rank = get_int(env, "RANK", 0);
  l.world_size = get_int(env, "WORLD_SIZE", 1, 1);
  l.local_world_size = get_int(env, "LOCAL_WORLD_SIZE", l.world_size, 1);
  l.local_rank = get_int(env, "LOCAL_RANK", l.rank % l.local_world_size);
  if (l.world_size % l.local_world_size != 0)
    fail("WORLD_SIZE={} is not a multiple of LOCAL_WORLD_SIZE={}", l.world_size, l.local_world_size);
  l.num_nodes = l.world_size / l.local_world_size;
  l.node_rank = get_int(env, "GROUP_RANK", l.rank / l.local_world_size);
  l.master_port = 29500;  // torchrun's own default
  apply_overrides(env, l);
  check_ranks(l, "RANK", "WORLD_SIZE", "LOCAL_RANK");
  return l;
}

RankLayout from_slurm(const EnvMap& env, const HostlistResolver& resolve_hosts) {
  RankLayout l;
  l.source = "slurm";
  l.rank = get_int(env, "SLURM_PROCID", 0);
  l.world_size = get_int(env, "SLURM_NTASKS", 1, 1);
  l.local_rank = get_int(env, "SLURM_LOCALID", 0);
  l.node_rank = get_int(env, "SLURM_NODEID", 0);

  std::string list_var;
  if (auto list = first_of(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"},
                           &list_var)) {
    l.hosts = resolve_hosts(*list);
    if (l.hosts.empty()) fail("{}='{}' names no host", list_var, *list);
  }
  l.num_nodes = get_int(env, "SLURM_STEP_NUM_NODES",
                        get_int(env, "SLURM_NNODES", l.hosts.empty() ? 1 : static_cast<int>(l.hosts.size()), 1), 1);
  if (l.node_rank >= l.num_nodes)
    fail("SLURM_NODEID={} is not below the step's {} node(s)", l.node_rank, l.num_nodes);
  if (auto spec = find(env, "SLURM_STEP_TASKS_PER_NODE")) {
    auto per_node = tasks_per_node(*spec);
    if (static_cast<int>(per_node.size()) <= l.node_rank)
      fail("SLURM_STEP_TASKS_PER_NODE='{}' has no entry for node {}", *spec, l.node_rank);
    l.local_world_size = per_node[static_cast<size_t>(l.node_rank)];
  } else {
    l.local_world_size = (l.world_size + l.num_nodes - 1) / l.num_nodes;
  }

  if (!l.hosts.empty()) l.master_addr = l.hosts.front();
  if (auto job = first_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"})) l.master_port = default_port_for_job(*job);
  apply_overrides(env, l);
  check_ranks(l, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  return l;
}

}  // namespace

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

int default_port_for_job(std::string_view job_id) {
  // Array jobs report "123_4" in some variables; the numeric head is the id.
  std::string_view head = job_id.substr(0, job_id.find('_'));
  unsigned long long id = 0;
  auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), id);
  if (head.empty() || ec != std::errc() || end != head.data() + head.size())
    fail("SLURM_JOB_ID='{}' is not a job number", job_id);
  return 20000 + static_cast<int>(id % 20000);
}

RankLayout detect_layout(const EnvMap& env, const HostlistResolver& resolve_hosts) {
  if (find(env, "RANK") || find(env, "WORLD_SIZE")) return from_torchrun(env);
  // In the batch script itself SLURM_PROCID may be set although srun has not
  // started the tasks; only a job step has a step id.
  bool in_step = find(env, "SLURM_STEP_ID") || find(env, "SLURM_STEPID");
  if (in_step && find(env, "SLURM_PROCID") && find(env, "SLURM_NTASKS")) return from_slurm(env, resolve_hosts);
  RankLayout l;
  // One process is its own rendezvous: no other rank has to find its store,
  // so it takes a free port (0) rather than torchrun's 29500, which two
  // single-rank jobs on one node (a shared node, a sweep's runs side by side)
  // would both claim, the second failing with EADDRINUSE. MASTER_PORT still
  // chooses one.
  l.master_port = 0;
  apply_overrides(env, l);
  return l;
}

RankLayout detect_layout(const EnvMap& env) {
  return detect_layout(env, [](std::string_view s) { return expand_hostlist(s); });
}

RankLayout detect_layout() {
  return detect_layout(current_environment(), [](std::string_view s) { return resolve_hostlist(s); });
}

void check_layout(const RankLayout& l, const LayoutRequest& r) {
  const char* how = l.source == "single"
                        ? " (this is a single process: start it with srun, torchrun or --nproc-per-node)"
                        : "";
  if (r.nodes > 0 && r.nodes != l.num_nodes)
    fail("--nodes {} but the {} environment provides {} node(s){}", r.nodes, l.source, l.num_nodes, how);
  if (r.gpus_per_node > 0 && r.gpus_per_node != l.local_world_size)
    fail("--gpus-per-node {} but the {} environment starts {} task(s) per node{}; start one task per "
         "GPU", r.gpus_per_node, l.source, l.local_world_size, how);
  if (r.uses_accelerator) {
    if (r.visible_devices == 0)
      fail("rank {} sees no accelerator (check CUDA_VISIBLE_DEVICES and the job's GPU request)", l.rank);
    if (device_index_for(l, r.visible_devices, r.bound_by_visible_devices, r.shared_devices) < 0) {
      if (l.source == "slurm")
        fail("{} tasks per node need one GPU each but rank {} sees only {} (check --gpus-per-node, "
             "CUDA_VISIBLE_DEVICES and --gpus-per-task/--gres)", l.local_world_size, l.rank, r.visible_devices);
      fail("{} ranks on this node need one GPU each but {} {} visible: hpcbench runs one rank per GPU. Start "
           "at most {} (--nproc-per-node {}){}, or make more GPUs visible (CUDA_VISIBLE_DEVICES)",
           l.local_world_size, r.visible_devices, r.visible_devices == 1 ? "is" : "are", r.visible_devices,
           r.visible_devices,
           r.visible_devices == 1 ? "; a strategy at world size 1 measures its overhead against the baseline "
                                    "(--keep-collectives runs its collectives there too), and --backend gloo "
                                    "--allow-shared-gpu lets the ranks share the GPU" : "");
    }
  }
}

int device_index_for(const RankLayout& l, int visible_devices, bool bound, bool shared) {
  if (visible_devices >= l.local_world_size) return l.local_rank;
  if (shared && visible_devices > 0) return l.local_rank % visible_devices;
  // SLURM's --gpus-per-task / --gpu-bind hand each task exactly its own GPU,
  // which it sees as its only one; so does a launcher that sets
  // CUDA_VISIBLE_DEVICES per rank (`bound`). Otherwise (our launcher,
  // torchrun) every rank sees the same devices, and one GPU for several
  // ranks would put them all on it. (Comm also compares the ranks' GPUs,
  // which catches a job whose tasks were not bound after all.)
  if (visible_devices == 1 && (l.source == "slurm" || bound)) return 0;
  return -1;
}

bool one_visible_device_named(const EnvMap& env) {
  auto v = find(env, "CUDA_VISIBLE_DEVICES");
  if (!v || v->empty()) return false;
  return v->find(',') == std::string::npos;
}

std::string describe(const RankLayout& l) {
  return fmt::format("{}: rank {}/{} local {}/{} node {}/{} rendezvous {}:{}", l.source, l.rank,
                     l.world_size, l.local_rank, l.local_world_size, l.node_rank, l.num_nodes,
                     l.master_addr, l.master_port);
}

}  // namespace hpcbench::dist
