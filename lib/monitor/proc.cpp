#include "monitor/proc.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/bounded_read.h"

namespace hpcbench::monitor {

namespace {

struct Stat {
  pid_t ppid = 0;
  double cpu_s = 0;
  int64_t rss_bytes = 0;
};

// /proc/<pid>/stat: the command may hold spaces and parentheses, so the
// fields are counted from the last ')'. utime and stime are fields 14 and 15,
// rss (pages) field 24.
std::optional<Stat> read_stat(pid_t pid) {
  std::string buf = read_file_or_empty("/proc/" + std::to_string(pid) + "/stat", file_limit::kProc);
  if (buf.empty()) return std::nullopt;
  char* p = std::strrchr(buf.data(), ')');
  if (!p) return std::nullopt;
  // Fields from 3 (state) on.
  std::vector<char*> fields;
  char* save = nullptr;
  for (char* tok = ::strtok_r(p + 1, " ", &save); tok; tok = ::strtok_r(nullptr, " ", &save)) fields.push_back(tok);
  if (fields.size() < 22) return std::nullopt;
  static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const int64_t page = ::sysconf(_SC_PAGESIZE);
  Stat s;
  s.ppid = static_cast<pid_t>(std::atol(fields[1]));                       // field 4
  s.cpu_s = (std::strtod(fields[11], nullptr) + std::strtod(fields[12], nullptr)) / tick;  // 14, 15
  s.rss_bytes = std::atoll(fields[21]) * page;                            // 24
  return s;
}

}  // namespace

namespace {

// Every root's tree members (the root first; empty for a root that is gone),
// from one pass over /proc.
std::vector<std::vector<pid_t>> find_members(const std::vector<pid_t>& roots) {
  std::set<pid_t> alive;
  std::multimap<pid_t, pid_t> by_parent;
  if (DIR* d = ::opendir("/proc")) {
    while (auto* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (!end || *end || pid <= 0) continue;
      if (auto s = read_stat(static_cast<pid_t>(pid))) {
        alive.insert(pid_t(pid));
        by_parent.emplace(s->ppid, pid_t(pid));
      }
    }
    ::closedir(d);
  }
  std::vector<std::vector<pid_t>> out;
  for (pid_t root : roots) {
    out.emplace_back();
    if (!alive.count(root)) continue;
    std::vector<pid_t> todo{root};
    while (!todo.empty()) {
      pid_t p = todo.back();
      todo.pop_back();
      out.back().push_back(p);
      auto [b, e] = by_parent.equal_range(p);
      for (auto c = b; c != e; ++c) todo.push_back(c->second);
    }
  }
  return out;
}

std::vector<std::optional<ProcTreeUsage>> read_members(const std::vector<std::vector<pid_t>>& members) {
  std::vector<std::optional<ProcTreeUsage>> out;
  for (auto& tree : members) {
    std::optional<ProcTreeUsage> u;
    for (size_t i = 0; i < tree.size(); ++i) {
      auto s = read_stat(tree[i]);
      if (!s) {
        if (i == 0) break;  // the root is gone: so is the rank
        continue;           // a child that ended
      }
      if (!u) u = ProcTreeUsage{};
      u->cpu_s += s->cpu_s;
      u->rss_bytes += s->rss_bytes;
    }
    out.push_back(u);
  }
  return out;
}

}  // namespace

std::vector<std::optional<ProcTreeUsage>> read_proc_trees(const std::vector<pid_t>& roots) {
  return read_members(find_members(roots));
}

ProcTrees::ProcTrees(std::vector<pid_t> roots, int rescan_every)
    : roots_(std::move(roots)), rescan_every_(std::max(rescan_every, 1)) {}

std::vector<std::optional<ProcTreeUsage>> ProcTrees::read() {
  if (reads_++ % rescan_every_ == 0) members_ = find_members(roots_);
  return read_members(members_);
}

}  // namespace hpcbench::monitor
