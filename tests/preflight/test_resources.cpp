// The memory the up-front check allows for: MemAvailable, and the job's
// cgroup limit less what it uses, cgroup v2 (memory.max) or v1
// (memory/memory.limit_in_bytes), read from a fake /proc and cgroup root
// made by each test.
#include "test_catch.h"

#include <stdlib.h>

#include <fstream>

#include "preflight/resources.h"
#include "specs/label.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

constexpr size_t kGiB = size_t{1} << 30;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A /proc/meminfo saying `gib` GiB are available.
fs::path meminfo(const fs::path& dir, size_t gib) {
  auto file = dir / "meminfo";
  write(file, "MemTotal:       67108864 kB\nMemFree:         1000000 kB\nMemAvailable:   " +
                  std::to_string(gib * 1024 * 1024) + " kB\n");
  return file;
}

}  // namespace

TEST_CASE("cgroup v1: memory.limit_in_bytes less memory.usage_in_bytes bounds the memory available") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  write(root / "memory" / "memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  write(root / "memory" / "memory.usage_in_bytes", std::to_string(kGiB / 2) + "\n");
  std::string source;
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, &source) == 2 * kGiB - kGiB / 2);
  CHECK(source.find("memory.limit_in_bytes") != std::string::npos);
}

TEST_CASE("cgroup v1 without a limit (2^63 rounded to a page) leaves MemAvailable") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
  write(root / "memory" / "memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  std::string source;
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, &source) == 8 * kGiB);
  CHECK(source.find("MemAvailable") != std::string::npos);
}

TEST_CASE("cgroup v1 limit above MemAvailable leaves MemAvailable; v2 and v1 together: the lower") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  write(root / "memory" / "memory.limit_in_bytes", std::to_string(64 * kGiB));
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root) == 8 * kGiB);
  write(root / "memory.max", std::to_string(4 * kGiB));
  write(root / "memory.current", std::to_string(kGiB));
  write(root / "memory" / "memory.limit_in_bytes", std::to_string(3 * kGiB));
  write(root / "memory" / "memory.usage_in_bytes", "0");
  std::string source;
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, &source) == 3 * kGiB);
  write(root / "memory" / "memory.limit_in_bytes", std::to_string(5 * kGiB));
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, &source) == 3 * kGiB);
  CHECK(source.find("memory.max") != std::string::npos);
}

TEST_CASE("a cgroup v1 limit already used up leaves nothing (not 'unknown'), so the check refuses") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  write(root / "memory" / "memory.limit_in_bytes", std::to_string(kGiB));
  write(root / "memory" / "memory.usage_in_bytes", std::to_string(2 * kGiB));
  const size_t avail = preflight::available_memory_at(meminfo(dir.path, 8), root);
  CHECK(avail > 0);
  CHECK(avail < 4096);
}

TEST_CASE("cgroup v2 'max' and unreadable or garbage limit files are no limit") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  write(root / "memory.max", "max\n");
  write(root / "memory" / "memory.limit_in_bytes", "lots\n");
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root) == 8 * kGiB);
  CHECK(preflight::available_memory_at(dir.path / "no-meminfo", dir.path / "no-cgroup") == 0);
}

// Issue 44, class 4: the limit of this process's own cgroup, as
// /proc/self/cgroup names it, and of every cgroup above it: not the root's
// alone (a 2 GB SLURM job cgroup below an unlimited root let 64 ranks
// "check out", and the kernel killed the launcher).
TEST_CASE("cgroup v2: this process's own cgroup and the ones above it bound the memory, the least wins") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  auto self = dir.path / "self-cgroup";
  write(self, "0::/system.slice/slurmstepd.scope/job_7/step_0\n");
  auto job = root / "system.slice" / "slurmstepd.scope" / "job_7";
  write(job / "memory.max", std::to_string(2 * kGiB) + "\n");
  write(job / "memory.current", std::to_string(kGiB / 4) + "\n");
  write(job / "step_0" / "memory.max", "max\n");
  std::string source;
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, self, &source) == 2 * kGiB - kGiB / 4);
  CHECK_THAT(source, Catch::Contains("memory.max") && Catch::Contains("job_7"));
  // A tighter limit nested below it wins.
  write(job / "step_0" / "memory.max", std::to_string(kGiB) + "\n");
  write(job / "step_0" / "memory.current", "0\n");
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, self, &source) == kGiB);
  CHECK_THAT(source, Catch::Contains("step_0"));
  // Another cgroup's limit (a sibling job's) is not this process's.
  write(self, "0::/system.slice/slurmstepd.scope/job_8\n");
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, self) == 8 * kGiB);
}

TEST_CASE("cgroup v1: the memory controller's own cgroup, named among several controllers") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  auto self = dir.path / "self-cgroup";
  write(self, "12:pids:/slurm/uid_0/job_9\n4:cpuacct,memory:/slurm/uid_0/job_9/step_batch\n0::/\n");
  auto job = root / "memory" / "slurm" / "uid_0" / "job_9";
  write(job / "memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  write(job / "memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  write(job / "step_batch" / "memory.limit_in_bytes", "9223372036854771712\n");
  write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
  std::string source;
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, self, &source) == kGiB);
  CHECK_THAT(source, Catch::Contains("memory.limit_in_bytes") && Catch::Contains("job_9"));
  // A path from outside this cgroup namespace reads the root it sees only.
  write(self, "4:memory:/../../job_9\n");
  CHECK(preflight::available_memory_at(meminfo(dir.path, 8), root, self) == 8 * kGiB);
}

// Issue 44: the CPU quota the same way: this process's own cgroup and every
// one above it, the tightest wins; the root's cpu.max alone let a job limited
// to 2 cores below an unlimited root count the node's cores.
TEST_CASE("cgroup v2: the CPU quota of this process's own cgroup and those above it, the tightest wins") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  auto self = dir.path / "self-cgroup";
  write(self, "0::/system.slice/slurmstepd.scope/job_7/step_0\n");
  auto job = root / "system.slice" / "slurmstepd.scope" / "job_7";
  write(root / "system.slice" / "cpu.max", "max 100000\n");
  write(job / "cpu.max", "200000 100000\n");  // 2 cores
  write(job / "step_0" / "cpu.max", "max 100000\n");
  std::string source;
  CHECK(preflight::cpu_quota_at(root, self, &source) == 2.0);
  CHECK_THAT(source, Catch::Contains("job_7") && Catch::Contains("cpu.max"));
  CHECK(preflight::usable_cores_at(64, root, self) == 2);
  CHECK(preflight::usable_cores_at(1, root, self) == 1);  // the affinity mask is tighter
  // A tighter quota nested below it wins; a part of a core rounds up.
  write(job / "step_0" / "cpu.max", "150000 100000\n");
  CHECK(preflight::cpu_quota_at(root, self, &source) == 1.5);
  CHECK_THAT(source, Catch::Contains("step_0"));
  CHECK(preflight::usable_cores_at(64, root, self) == 2);
  // A looser one above does not loosen it.
  write(root / "system.slice" / "cpu.max", "400000 100000\n");
  CHECK(preflight::cpu_quota_at(root, self) == 1.5);
  // Another cgroup's quota (a sibling job's) is not this process's; the
  // levels above it still count.
  write(self, "0::/system.slice/slurmstepd.scope/job_8\n");
  CHECK(preflight::cpu_quota_at(root, self) == 4.0);
  CHECK(preflight::usable_cores_at(64, root, self) == 4);
  // Garbage and "max" everywhere: no quota.
  write(root / "system.slice" / "cpu.max", "lots\n");
  CHECK(preflight::cpu_quota_at(root, self) == -1);
  CHECK(preflight::usable_cores_at(64, root, self) == 64);
  CHECK(preflight::usable_cores_at(64, dir.path / "no-cgroup", dir.path / "no-self") == 64);
}

TEST_CASE("cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us of the cpu controller's own cgroup and above") {
  test::TempDir dir;
  auto root = dir.path / "cgroup";
  auto self = dir.path / "self-cgroup";
  write(self, "12:memory:/slurm/uid_0/job_9\n3:cpu,cpuacct:/slurm/uid_0/job_9/step_batch\n0::/\n");
  auto job = root / "cpu,cpuacct" / "slurm" / "uid_0" / "job_9";
  write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n");
  write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n");
  write(job / "cpu.cfs_quota_us", "300000\n");
  write(job / "cpu.cfs_period_us", "100000\n");
  write(job / "step_batch" / "cpu.cfs_quota_us", "-1\n");
  write(job / "step_batch" / "cpu.cfs_period_us", "100000\n");
  std::string source;
  CHECK(preflight::cpu_quota_at(root, self, &source) == 3.0);
  CHECK_THAT(source, Catch::Contains("job_9") && Catch::Contains("cpu.cfs_quota_us"));
  CHECK(preflight::usable_cores_at(16, root, self) == 3);
  // The memory controller's path is not the cpu controller's.
  write(self, "12:cpu,cpuacct:/slurm/uid_0/job_10\n4:memory:/slurm/uid_0/job_9\n");
  CHECK(preflight::cpu_quota_at(root, self) == -1);
  // cpu/ (the usual link to cpu,cpuacct/) is read where it is there.
  write(self, "3:cpu,cpuacct:/slurm/uid_0/job_9/step_batch\n");
  write(root / "cpu" / "slurm" / "uid_0" / "job_9" / "cpu.cfs_quota_us", "50000\n");
  write(root / "cpu" / "slurm" / "uid_0" / "job_9" / "cpu.cfs_period_us", "100000\n");
  CHECK(preflight::cpu_quota_at(root, self) == 0.5);
  CHECK(preflight::usable_cores_at(16, root, self) == 1);
}

TEST_CASE("an injected memory figure is parsed strictly: a malformed one is an error, not 'off'") {
  for (const char* bad : {"abc", "-5", "1e30", "12abc", "", " 7", "99999999999999999999999"}) {
    INFO(bad);
    ::setenv("HPCBENCH_INJECT", (std::string("memory_bytes=") + bad).c_str(), 1);
    CHECK_THROWS_WITH(preflight::available_memory(), Catch::Contains("HPCBENCH_INJECT memory_bytes="));
  }
  ::setenv("HPCBENCH_INJECT", "memory_bytes=4294967296", 1);
  std::string source;
  CHECK(preflight::available_memory(&source) == 4 * kGiB);
  CHECK_THAT(source, Catch::Contains("memory_bytes"));
  ::unsetenv("HPCBENCH_INJECT");
}

TEST_CASE("under a CUDA graph the device check counts the graph's pool: one micro-batch's activations at least") {
  train::TrainConfig cfg;
  cfg.model = "bert-base-uncased";
  cfg.precision = "bf16";
  cfg.batch_size = 32;
  cfg.max_seq_length = 384;
  cfg.dropout = 0;
  const auto baseline = strategies::parse_label("baseline", "--strategy");
  // Korthikanti et al.'s count without dropout or s² scores, e = 2 bytes:
  // LayerNorm inputs 2e, QKV input e, MLP input e, Q and K 2e, V e,
  // attention-output input e, GELU in and out 2e·4 (i = 4h): 16e = 32 bytes
  // per token and hidden unit, for each of the 12 layers.
  const double pool = 12.0 * 32 * 384 * 768 * 32;
  CHECK(preflight::graph_pool_bytes(cfg) == Approx(pool));
  // Gradient accumulation does not add to it: micro-batches reuse the blocks.
  cfg.grad_accum = 4;
  CHECK(preflight::graph_pool_bytes(cfg) == Approx(pool));
  const double state = preflight::model_state_per_rank(cfg, baseline, 1, 1);
  const auto device = static_cast<size_t>(state + pool / 2);
  CHECK_NOTHROW(preflight::check_device_memory(cfg, baseline, 1, 1, device, "test GPU"));  // eager fits
  cfg.cuda_graph = true;
  CHECK_THROWS_WITH(preflight::check_device_memory(cfg, baseline, 1, 1, device, "test GPU"),
                    Catch::Contains("the CUDA graph's pool at least 3.4 GiB more") && Catch::Contains("test GPU"));
  CHECK_NOTHROW(preflight::check_device_memory(cfg, baseline, 1, 1, static_cast<size_t>(state + pool * 1.01),
                                               "test GPU"));
}
