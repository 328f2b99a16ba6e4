#include "core/hostinfo.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <sstream>
#include <string_view>
#include <thread>

#include "core/bounded_read.h"

extern char** environ;

namespace hpcbench {

std::string hostname() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
}

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

std::vector<std::pair<std::string, std::string>> job_environment() {
  static constexpr std::array<std::string_view, 9> prefixes = {
      "SLURM_", "SLURMD_", "NCCL_", "GLOO_", "CUDA_", "OMP_", "MKL_", "TORCH_", "HPCBENCH_"};
  static constexpr std::array<std::string_view, 8> exact = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
      "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "NODE_RANK"};
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq);
    bool keep = std::find(exact.begin(), exact.end(), key) != exact.end() ||
                std::any_of(prefixes.begin(), prefixes.end(),
                            [&](std::string_view p) { return key.starts_with(p); });
    if (keep) out.emplace_back(std::string(key), std::string(kv.substr(eq + 1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t current_private_bytes() {
  std::istringstream statm(read_file_or_empty("/proc/self/statm", file_limit::kProc));
  size_t pages_total = 0, pages_resident = 0, pages_shared = 0;
  statm >> pages_total >> pages_resident >> pages_shared;
  const size_t pages = pages_resident > pages_shared ? pages_resident - pages_shared : 0;
  return pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

size_t peak_rss_bytes() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<size_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace hpcbench
