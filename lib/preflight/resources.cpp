#include "preflight/resources.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/hostinfo.h"
#include "core/injection.h"
#include "specs/model_shape.h"
#include "train/engine.h"
#include "train/setup.h"

namespace hpcbench::preflight {

namespace {

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

std::string size_text(double bytes) {
  return bytes >= 1024.0 * 1024.0 * 1024.0 ? fmt::format("{:.2f} GiB", gib(bytes))
                                           : fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024.0));
}

std::string first_line(const std::filesystem::path& path) {
  const std::string text = read_file_or_empty(path, file_limit::kProc);
  return text.substr(0, text.find('\n'));
}

int dtype_bytes(const std::string& name) { return name == "bf16" || name == "fp16" ? 2 : 4; }

}  // namespace

int node_cores() {
  if (const char* slurm = std::getenv("SLURM_CPUS_ON_NODE"); slurm && *slurm) {
    int n = std::atoi(slurm);
    if (n > 0) return n;
  }
  return usable_cores();
}

size_t available_memory(std::string* source) {
  // 2^62: past any machine, and a size_t on every platform this runs on.
  if (auto given = injected_number("memory_bytes", uint64_t{1} << 62)) {
    if (source) *source = fmt::format("{} memory_bytes", kInjectVariable);
    return static_cast<size_t>(*given);
  }
  return available_memory_at("/proc/meminfo", "/sys/fs/cgroup", "/proc/self/cgroup", source);
}

namespace {

// A limit file's number; -1 for "max", empty, unreadable or not a number.
double limit_value(const std::filesystem::path& file) {
  std::string text = first_line(file);
  if (text.empty() || text == "max") return -1;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && std::isfinite(v) && v >= 0 ? v : -1;
}

// This process's cgroup in each hierarchy, from /proc/self/cgroup:
// "0::/<path>" (v2), "<n>:memory:/<path>" or "<n>:cpuacct,memory:/<path>"
// (v1's memory controller), "<n>:cpu,cpuacct:/<path>" (v1's cpu
// controller). "/" where the file does not say (no file, a container's own
// namespace).
struct OwnCgroup {
  std::string v2 = "/", v1_memory = "/", v1_cpu = "/";
};

OwnCgroup own_cgroup(const std::filesystem::path& self_cgroup_file) {
  OwnCgroup own;
  if (self_cgroup_file.empty()) return own;
  std::istringstream lines(read_file_or_empty(self_cgroup_file, file_limit::kProc));
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    // A path from outside this cgroup namespace ("/../..") is not below the root seen here.
    if (path.empty() || path.front() != '/' || path.find("/..") != std::string::npos) continue;
    if (line.substr(0, a) == "0" && controllers.empty()) own.v2 = path;
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) {
      if (c == "memory") own.v1_memory = path;
      if (c == "cpu") own.v1_cpu = path;
    }
  }
  return own;
}

// Calls `visit` with this process's cgroup folder below `top` (`own`, as
// /proc/self/cgroup names it) and each folder above it, up to `top`: a job's
// cgroup and the user's or the node's above it each bound it. A level that is
// not there (a container that sees only its own part) reads as no limit.
template <typename Visit>
void each_level(const std::filesystem::path& top, const std::string& own, Visit visit) {
  const auto rel = std::filesystem::path(own).relative_path();
  std::filesystem::path dir = rel.empty() ? top : top / rel;
  for (;;) {
    visit(dir);
    if (dir == top || !dir.has_relative_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
}

struct LimitFiles {
  const char* limit;
  const char* usage;
  const char* text;
};

// The least that any level from `top / own` up to `top` leaves (its limit
// less its usage). -1: no level has a limit.
double least_left(const std::filesystem::path& top, const std::string& own, const LimitFiles& f, std::string* where) {
  double least = -1;
  each_level(top, own, [&](const std::filesystem::path& dir) {
    const double limit = limit_value(dir / f.limit);
    if (limit <= 0 || limit >= 4611686018427387904.0) return;
    const double left = std::max(0.0, limit - std::max(0.0, limit_value(dir / f.usage)));
    if (least < 0 || left < least) {
      least = left;
      *where = fmt::format("{} in {}", f.text, dir.string());
    }
  });
  return least;
}

// A level's CPU quota in cores: cgroup v2's cpu.max ("max 100000": none, or
// "<quota> <period>"), v1's cpu.cfs_quota_us over cpu.cfs_period_us (-1:
// none). -1 where the level sets none.
double v2_quota(const std::filesystem::path& dir) {
  std::istringstream line(first_line(dir / "cpu.max"));
  double quota = 0, period = 0;
  // "max" is not a number: no quota.
  if (!(line >> quota >> period) || !std::isfinite(quota) || quota <= 0 || !(period > 0)) return -1;
  return quota / period;
}

double v1_quota(const std::filesystem::path& dir) {
  const double quota = limit_value(dir / "cpu.cfs_quota_us"), period = limit_value(dir / "cpu.cfs_period_us");
  return quota > 0 && period > 0 ? quota / period : -1;
}

}  // namespace

double cpu_quota_at(const std::filesystem::path& cgroup_root, const std::filesystem::path& self_cgroup_file,
                    std::string* source) {
  const OwnCgroup own = own_cgroup(self_cgroup_file);
  double least = -1;
  auto take = [&](double quota, const std::filesystem::path& file) {
    if (quota <= 0 || (least > 0 && quota >= least)) return;
    least = quota;
    if (source) *source = file.string();
  };
  each_level(cgroup_root, own.v2, [&](const std::filesystem::path& dir) { take(v2_quota(dir), dir / "cpu.max"); });
  // v1 mounts the cpu controller as cpu/ (often a link to cpu,cpuacct/).
  std::error_code ec;
  auto v1 = cgroup_root / "cpu";
  if (!std::filesystem::exists(v1, ec)) v1 = cgroup_root / "cpu,cpuacct";
  each_level(v1, own.v1_cpu,
             [&](const std::filesystem::path& dir) { take(v1_quota(dir), dir / "cpu.cfs_quota_us"); });
  return least;
}

int usable_cores_at(int cores, const std::filesystem::path& cgroup_root, const std::filesystem::path& self_cgroup_file) {
  const double quota = cpu_quota_at(cgroup_root, self_cgroup_file);
  // A quota of 1.5 cores lets two threads run, each part of the time.
  if (quota > 0) cores = std::min(cores, static_cast<int>(std::ceil(quota)));
  return std::max(1, cores);
}

int usable_cores() {
  int cores = static_cast<int>(hardware_threads());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  return usable_cores_at(cores, "/sys/fs/cgroup", "/proc/self/cgroup");
}

size_t available_memory_at(const std::filesystem::path& meminfo_file, const std::filesystem::path& cgroup_root,
                           std::string* source) {
  return available_memory_at(meminfo_file, cgroup_root, {}, source);
}

size_t available_memory_at(const std::filesystem::path& meminfo_file, const std::filesystem::path& cgroup_root,
                           const std::filesystem::path& self_cgroup_file, std::string* source) {
  auto said = [&](const std::string& s) {
    if (source) *source = s;
  };
  double avail = 0;
  std::istringstream meminfo(read_file_or_empty(meminfo_file, file_limit::kProc));
  for (std::string key; meminfo >> key;) {
    size_t kb = 0;
    std::string unit;
    meminfo >> kb >> unit;
    if (key == "MemAvailable:") {
      avail = static_cast<double>(kb) * 1024;
      break;
    }
  }
  said("MemAvailable in " + meminfo_file.string());
  // A job's cgroup limit is what the kernel enforces first: cgroup v2's
  // memory.max, or where the node still mounts cgroup v1 (many SLURM
  // clusters do), the memory controller's memory.limit_in_bytes; this
  // process's own cgroup (a SLURM job's, a step's) and every one above it.
  // v1 writes "no limit" as a page-rounded 2^63 - 1, so a limit past 2^62
  // bytes is none.
  const OwnCgroup own = own_cgroup(self_cgroup_file);
  const LimitFiles v2{"memory.max", "memory.current", "the cgroup's memory.max less memory.current"};
  const LimitFiles v1{"memory.limit_in_bytes", "memory.usage_in_bytes",
                      "the cgroup (v1) memory.limit_in_bytes less memory.usage_in_bytes"};
  for (const auto& [top, path, files] : {std::tuple{cgroup_root, own.v2, v2},
                                         std::tuple{cgroup_root / "memory", own.v1_memory, v1}}) {
    std::string where;
    const double left = least_left(top, path, files, &where);
    if (left < 0) continue;
    if (avail == 0 || left < avail) {
      // A limit already used up leaves nothing: reported as one byte, since
      // 0 means "the node does not say".
      avail = std::max(left, 1.0);
      said(where);
    }
  }
  return static_cast<size_t>(avail);
}

std::string core_warning(int ranks, int threads_per_rank, int cores, const std::string& ranks_flag) {
  const int64_t want = static_cast<int64_t>(ranks) * std::max(threads_per_rank, 1);
  if (want <= cores) return "";
  return fmt::format(
      "{}: {} rank(s) x {} intra-op thread(s) = {} threads on {} usable core(s): the cores are oversubscribed "
      "{:.1f}x, so the run measures how they are shared more than the strategy (results record cpu_cores and "
      "threads_per_rank; give fewer ranks or --threads)",
      ranks_flag, ranks, std::max(threads_per_rank, 1), want, cores, static_cast<double>(want) / cores);
}

double model_state_per_rank(const train::TrainConfig& cfg, const strategies::Choice& strategy, int world_size,
                            int ranks_per_node) {
  auto mcfg = train::model_config(cfg);
  strategies::MemoryInputs in;
  in.units = mcfg.unit_parameters();
  const int per_node = std::max(1, std::min(ranks_per_node, world_size));
  in.shape = {std::max(1, world_size / per_node), per_node};
  const bool mixed = cfg.precision == "bf16" || cfg.precision == "fp16";
  in.compute_bytes = mixed ? dtype_bytes(cfg.precision) : 4;
  in.reduce_bytes = in.compute_bytes;
  in.resident = train::choose_engine(cfg, strategy, {}, in.shape).resident();
  return strategy.memory(in).total();
}

RankMemory rank_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int world_size,
                       int ranks_per_node, bool on_accelerator) {
  RankMemory r;
  if (!on_accelerator) r.model_state = model_state_per_rank(cfg, strategy, world_size, ranks_per_node);
  r.runtime = static_cast<double>(current_private_bytes());
  // Every rank holds all training features: three int32 arrays per token as
  // built, three int64 tensors per token as the trainer indexes them.
  if (cfg.train_data == "synthetic")
    r.features = 36.0 * static_cast<double>(cfg.synthetic_samples) * static_cast<double>(cfg.max_seq_length);
  return r;
}

void check_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int ranks,
                  int world_size, bool on_accelerator, const std::string& ranks_flag) {
  std::string source;
  const double avail = static_cast<double>(available_memory(&source));
  if (avail <= 0) return;  // the node does not say
  const auto one = rank_memory(cfg, strategy, world_size, ranks, on_accelerator);
  const double need = one.total() * ranks;
  const std::string parts = fmt::format(
      "{}runtime {} (this process's private memory, LibTorch loaded){}", one.model_state > 0
          ? fmt::format("model state {} (the memory model for {}, docs/memory.md) + ", size_text(one.model_state),
                        strategy.label())
          : "",
      size_text(one.runtime), one.features > 0 ? fmt::format(" + training features {}", size_text(one.features)) : "");
  if (need > avail)
    fail("{}: {} rank(s) need at least {:.1f} GiB of memory on this node, {} each ({}), but {:.1f} GiB is "
         "available ({}); the ranks would be killed part-way through the run. Give fewer ranks, a smaller model, "
         "or a strategy that partitions the model state over the ranks",
         ranks_flag, ranks, gib(need), size_text(one.total()), parts, gib(avail), source);
}

double graph_pool_bytes(const train::TrainConfig& cfg, int64_t split) {
  const auto m = train::model_config(cfg);
  const bool mixed = cfg.precision == "bf16" || cfg.precision == "fp16";
  const bool dropout = m.hidden_dropout_prob > 0 || m.attention_probs_dropout_prob > 0;
  return static_cast<double>(m.num_hidden_layers) *
         strategies::layer_activation_bytes(train::model_shape(m), cfg.batch_size, cfg.max_seq_length, mixed ? 2 : 4,
                                            dropout, /*scores=*/false, std::max<int64_t>(1, split));
}

void check_device_memory(const train::TrainConfig& cfg, const strategies::Choice& strategy, int world_size,
                         int ranks_per_node, size_t device_bytes, const std::string& device_name) {
  if (device_bytes == 0) return;
  const double state = model_state_per_rank(cfg, strategy, world_size, ranks_per_node);
  // Ranks that hold parts of one model split the heads and the MLP at most
  // over every rank: a lower bound for any split.
  const strategies::Shape shape{1, world_size};
  const bool graph = train::choose_engine(cfg, strategy, {true}, shape).graph();
  const bool replica = strategy.spec().data_parallel_size(strategy.options(), shape) == world_size;
  const double pool = graph ? graph_pool_bytes(cfg, replica ? 1 : world_size) : 0;
  if (state + pool > static_cast<double>(device_bytes))
    fail("--model {} under --strategy {} on {} rank(s): the model state alone is {:.1f} GiB per rank (the memory "
         "model, docs/memory.md){}, more than the {:.1f} GiB of the {}; use more ranks with a strategy that "
         "partitions the model state, bf16, or a smaller model",
         cfg.model, strategy.label(), world_size, gib(state),
         graph ? fmt::format(", and the CUDA graph's pool at least {:.1f} GiB more (its step's activations, kept "
                             "for the run)", gib(pool))
               : "",
         gib(static_cast<double>(device_bytes)), device_name);
}

}  // namespace hpcbench::preflight
