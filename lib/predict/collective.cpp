#include "predict/collective.h"

#include <cmath>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"

namespace hpcbench::predict {

int ring_steps(const std::string& op, int n) {
  if (n <= 1) return 0;
  return op == "all_reduce" ? 2 * (n - 1) : n - 1;
}

namespace {

double rate(const Tier& t, double share = 1) {
  double b = t.bandwidth_GBps * t.efficiency * 1e9 / share;
  if (!(b > 0)) fail("network tier \"{}\": bandwidth {} GB/s x efficiency {} is not positive", t.link,
                     t.bandwidth_GBps, t.efficiency);
  return b;
}

}  // namespace

double AlphaBeta::seconds(const std::string& op, double bytes, const Group& group) const {
  const int g = group.per_node, n = group.nodes;
  if (group.ranks() <= 1 || bytes <= 0) return 0;
  const double a1 = sys_.intra.latency_us * 1e-6, a2 = sys_.inter.latency_us * 1e-6;
  if (n == 1) return ring_steps(op, g) * a1 + bytes * results::bus_factor(op, g) / rate(sys_.intra);
  // A GPU's share of its node's NICs: the g GPUs of a node cross nodes together.
  const double b2 = rate(sys_.inter, g);
  if (g == 1) return ring_steps(op, n) * a2 + bytes * results::bus_factor(op, n) / rate(sys_.inter, group.share);
  const double b1 = rate(sys_.intra);
  if (op == "broadcast")  // pipelined along a chain: the slowest link sets the pace
    return (g - 1) * a1 + (n - 1) * a2 + bytes / std::min(b1, b2);
  const double one = (g - 1) * a1 + (n - 1) * a2 + bytes * (g - 1) / g / b1 + (bytes / g) * (n - 1) / n / b2;
  if (op == "all_reduce") return 2 * one;
  if (op == "all_gather" || op == "reduce_scatter") return one;
  fail("unknown collective \"{}\"", op);
}

std::string AlphaBeta::describe() const {
  return fmt::format("{} ({}): intra {} {} GB/s x{} +{} us, inter {} {} GB/s/node x{} +{} us", sys_.name,
                     sys_.file, sys_.intra.link, sys_.intra.bandwidth_GBps, sys_.intra.efficiency,
                     sys_.intra.latency_us, sys_.inter.link, sys_.inter.bandwidth_GBps, sys_.inter.efficiency,
                     sys_.inter.latency_us);
}

Measured::Measured(std::vector<results::BenchCommRow> rows, int ranks, int nodes, std::string file)
    : rows_(std::move(rows)), ranks_(ranks), nodes_(nodes), file_(std::move(file)) {
  std::sort(rows_.begin(), rows_.end(), [](auto& a, auto& b) { return std::tie(a.op, a.bytes) < std::tie(b.op, b.bytes); });
}

double Measured::seconds(const std::string& op, double bytes, const Group& group) const {
  if (group.ranks() <= 1 || bytes <= 0) return 0;
  std::vector<const results::BenchCommRow*> r;
  for (auto& row : rows_)
    if (row.op == op) r.push_back(&row);
  if (r.empty()) fail("{}: no {} rows (run bench-comm with --op {} or --op all)", file_, op, op);
  double t = 0;
  if (bytes <= r.front()->bytes) {
    t = r.front()->time_us * 1e-6;  // latency-bound: no smaller than the smallest measured
  } else if (bytes >= r.back()->bytes) {
    auto& last = *r.back();
    t = last.time_us * 1e-6 * (bytes / static_cast<double>(last.bytes));
  } else {
    size_t k = 1;
    while (r[k]->bytes < bytes) ++k;
    auto &lo = *r[k - 1], &hi = *r[k];
    double w = (bytes - lo.bytes) / static_cast<double>(hi.bytes - lo.bytes);
    t = 1e-6 * (lo.time_us + w * (hi.time_us - lo.time_us));
  }
  if (group.ranks() != ranks_) {
    double f0 = results::bus_factor(op, ranks_), f1 = results::bus_factor(op, group.ranks());
    if (f0 <= 0) fail("{}: measured at {} rank, which says nothing about {} ranks", file_, ranks_, group.ranks());
    t *= f1 / f0;
  }
  return t;
}

std::string Measured::describe() const {
  return fmt::format("bench-comm {} ({} ranks on {} node(s), {} rows)", file_, ranks_, nodes_, rows_.size());
}

std::unique_ptr<Measured> read_bench_comm(const std::string& path) {
  auto f = results::read_bench_comm_file(path, "--comm");
  for (auto& r : f.rows) {
    if (!std::isfinite(r.time_us) || !(r.time_us > 0) || !std::isfinite(r.busbw) || r.busbw < 0 || r.bytes < 0)
      fail("--comm {}: {} of {} bytes: time {} us, bus bandwidth {} GB/s is not a measurement (times must be "
           "positive, bandwidths not negative, both finite)", path, r.op, r.bytes, r.time_us, r.busbw);
    if (r.wrong != 0)
      fail("--comm {}: {} of {} bytes has {} wrong values; a failed measurement is not a model", path, r.op, r.bytes,
           r.wrong);
  }
  if (f.ranks < 0 || f.nodes < 1 || (f.ranks > 0 && f.nodes > f.ranks))
    fail("--comm {}: {} rank(s) on {} node(s) is not a layout", path, f.ranks, f.nodes);
  if (f.rows.empty()) fail("--comm {}: no measurements", path);
  return std::make_unique<Measured>(std::move(f.rows), f.ranks, f.nodes, path);
}

}  // namespace hpcbench::predict
