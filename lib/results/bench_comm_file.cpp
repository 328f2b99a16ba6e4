#include "results/bench_comm_file.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "core/bounded_read.h"
#include "core/error.h"

namespace hpcbench::results {

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return static_cast<double>(n - 1) / n;
  return 1.0;
}

std::string bench_comm_shape_line(const std::string& backend, int ranks, int nodes, const std::string& where) {
  return fmt::format("# backend {}, {} rank(s) on {} node(s) ({})", backend, ranks, nodes, where);
}

std::string bench_comm_header() {
  return fmt::format("#{:>14} {:>12} {:>12} {:>8} {:>6} {:>5} {:>11} {:>11} {:>11} {:>7}\n", "op", "size(B)",
                     "count", "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
}

std::string bench_comm_line(const BenchCommRow& r) {
  return fmt::format("{:>15} {:>12} {:>12} {:>8} {:>6} {:>5} {:>11.2f} {:>11.4f} {:>11.4f} {:>7}\n", r.op,
                     r.bytes, r.count, r.type, r.redop, r.root, r.time_us, r.algbw, r.busbw, r.wrong);
}

BenchCommFile read_bench_comm_file(const std::filesystem::path& path, const std::string& what) {
  std::string text;
  try {
    // A bench-comm table is a few hundred lines.
    text = read_file_bounded(path, 16 * kMiB);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("{} {}: cannot read the file: {}", what, path.string(), e.what());
  }
  std::istringstream in(text);
  BenchCommFile f;
  f.ranks = 0;
  std::string line;
  const std::regex shape(R"(# backend \S+, (\d{1,9}) rank\(s\) on (\d{1,9}) node\(s\))");
  // More ranks than any machine has is a damaged file (the ring arithmetic
  // of the cost model would overflow on it).
  constexpr int kMaxRanks = 1 << 20;
  for (int no = 1; std::getline(in, line); ++no) {
    std::smatch m;
    if (std::regex_search(line, m, shape)) {
      f.ranks = std::stoi(m[1]);
      f.nodes = std::stoi(m[2]);
      if (f.ranks < 1 || f.ranks > kMaxRanks || f.nodes < 1 || f.nodes > f.ranks)
        fail("{} {}: line {}: {} rank(s) on {} node(s) is no job (1 to {} ranks, at most one node each)", what,
             path.string(), no, f.ranks, f.nodes, kMaxRanks);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    BenchCommRow r;
    if (!(s >> r.op >> r.bytes >> r.count >> r.type >> r.redop >> r.root >> r.time_us >> r.algbw >> r.busbw >> r.wrong))
      fail("{} {}: line {} is not a bench-comm row: \"{}\"", what, path.string(), no, line);
    // A time is what the cost model divides sizes by.
    if (!std::isfinite(r.time_us) || r.time_us < 0 || r.time_us > 1e12 || r.bytes < 0 || !std::isfinite(r.algbw) ||
        !std::isfinite(r.busbw))
      fail("{} {}: line {}: {} B in {} us is not a measurement (no size or time is negative, infinite or beyond "
           "any run): \"{}\"", what, path.string(), no, r.bytes, r.time_us, line);
    f.rows.push_back(r);
  }
  if (f.ranks == 0)
    fail("{} {}: no \"# backend ..., N rank(s) on M node(s)\" line; is it bench-comm --output?", what, path.string());
  return f;
}

}  // namespace hpcbench::results
