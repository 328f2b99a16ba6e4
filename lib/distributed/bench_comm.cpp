#include "distributed/bench_comm.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "core/injection.h"
#include "device/device.h"

namespace hpcbench::dist {

namespace {

using Clock = std::chrono::steady_clock;

c10::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float32" || dtype == "float") return at::kFloat;
  if (dtype == "float64" || dtype == "double") return at::kDouble;
  if (dtype == "int32" || dtype == "int") return at::kInt;
  fail("--dtype {}: use float32, float64 or int32", dtype);
}

// nccl-tests style data: small integers, different per rank and per element,
// so that sums are exact in every type and a misplaced chunk shows.
at::Tensor pattern(int64_t count, int64_t offset, int rank, const at::TensorOptions& opts) {
  auto i = at::arange(offset, offset + count, opts.dtype(at::kLong));
  return ((i * 7 + rank * 3) % 17 + 1).to(opts.dtype().toScalarType());
}

// An injected fault (core/injection.h) makes that rank fail after `after`
// timed collectives, so that the tests can check that the job dies promptly
// and names the rank.
struct Fault {
  std::optional<InjectedFault> injected = injected_fault({"kill", "abort", "exit", "hang", "stop"});
  long seen = 0;
  void tick(int my_rank) {
    if (injected && my_rank == injected->rank && ++seen > injected->after) carry_out(*injected, "collectives");
  }
};

struct Buffers {
  at::Tensor in, out, expected;
};

int64_t elements_for(const std::string& op, int64_t bytes, int64_t word, int ranks) {
  int64_t count = bytes / word;
  if (op == "all_gather" || op == "reduce_scatter") count = count / ranks * ranks;
  return count;
}

Buffers prepare(const std::string& op, int64_t count, Comm& comm, const at::TensorOptions& opts) {
  int n = comm.size(), r = comm.rank();
  Buffers b;
  if (op == "all_reduce") {
    b.in = pattern(count, 0, r, opts);
    b.out = b.in;
    b.expected = at::zeros({count}, opts);
    for (int q = 0; q < n; ++q) b.expected += pattern(count, 0, q, opts);
  } else if (op == "all_gather") {
    int64_t c = count / n;
    b.in = pattern(c, r * c, r, opts);
    b.out = at::empty({count}, opts);
    std::vector<at::Tensor> parts;
    for (int q = 0; q < n; ++q) parts.push_back(pattern(c, q * c, q, opts));
    b.expected = at::cat(parts);
  } else if (op == "reduce_scatter") {
    int64_t c = count / n;
    b.in = pattern(count, 0, r, opts);
    b.out = at::empty({c}, opts);
    b.expected = at::zeros({c}, opts);
    for (int q = 0; q < n; ++q) b.expected += pattern(c, r * c, q, opts);
  } else {  // broadcast from rank 0
    b.expected = pattern(count, 0, 0, opts);
    b.in = r == 0 ? b.expected.clone() : at::zeros({count}, opts);
    b.out = b.in;
  }
  return b;
}

void run_op(const std::string& op, Comm& comm, Buffers& b) {
  if (op == "all_reduce") comm.allreduce(b.in);
  else if (op == "all_gather") comm.allgather(b.out, b.in);
  else if (op == "reduce_scatter") comm.reduce_scatter(b.out, b.in);
  else comm.broadcast(b.in, 0);
}

double all_mean(Comm& comm, double v) {
  auto t = at::full({1}, v, at::TensorOptions().dtype(at::kDouble).device(comm.device()));
  comm.allreduce(t, true);
  return t.cpu().item<double>();
}

int64_t all_sum(Comm& comm, int64_t v) {
  auto t = at::full({1}, v, at::TensorOptions().dtype(at::kLong).device(comm.device()));
  comm.allreduce(t);
  return t.cpu().item<int64_t>();
}

}  // namespace

std::vector<std::string> known_ops() { return {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}; }

int64_t parse_bytes(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    fail("{} {}: not a size (e.g. 8, 64K, 128M, 1G)", flag, text);
  }
  std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K" || unit == "k" || unit == "KB" || unit == "KiB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") fail("{} {}: unknown unit '{}' (use K, M or G)", flag, text, unit);
  double bytes = v * scale;
  if (!(bytes >= 1) || bytes > 64.0 * 1024 * 1024 * 1024) fail("{} {}: must be between 1 B and 64 GiB", flag, text);
  return static_cast<int64_t>(bytes);
}

void validate(const BenchCommConfig& c) {
  if (c.ops.empty()) fail("--op: name at least one of all_reduce, all_gather, reduce_scatter, broadcast, all");
  auto ops = known_ops();
  for (auto& op : c.ops)
    if (std::find(ops.begin(), ops.end(), op) == ops.end())
      fail("--op {}: use all_reduce, all_gather, reduce_scatter, broadcast or all", op);
  if (c.min_bytes > c.max_bytes) fail("--min-bytes {} is above --max-bytes {}", c.min_bytes, c.max_bytes);
  if (!(c.factor > 1.0)) fail("--factor {}: must be above 1", c.factor);
  if (c.iters < 1) fail("--iters {}: must be at least 1", c.iters);
  if (c.warmup_iters < 0) fail("--warmup-iters {}: must not be negative", c.warmup_iters);
  scalar_type(c.dtype);
}

std::vector<results::BenchCommRow> run_bench_comm(Comm& comm, const BenchCommConfig& config,
                                         const std::function<void(const results::BenchCommRow&)>& on_row) {
  validate(config);
  auto opts = at::TensorOptions().dtype(scalar_type(config.dtype)).device(comm.device());
  const int64_t word = static_cast<int64_t>(c10::elementSize(scalar_type(config.dtype)));
  Fault fault;
  std::vector<results::BenchCommRow> rows;
  for (const auto& op : config.ops) {
    int64_t last_count = -1;
    for (double size = static_cast<double>(config.min_bytes); size <= static_cast<double>(config.max_bytes) * (1 + 1e-9);
         size *= config.factor) {
      int64_t count = elements_for(op, static_cast<int64_t>(size), word, comm.size());
      if (count == 0 || count == last_count) continue;
      last_count = count;
      Buffers b = prepare(op, count, comm, opts);
      for (int i = 0; i < config.warmup_iters; ++i) run_op(op, comm, b);
      comm.barrier();
      synchronize(comm.device());
      auto t0 = Clock::now();
      for (int i = 0; i < config.iters; ++i) {
        run_op(op, comm, b);
        fault.tick(comm.rank());
      }
      synchronize(comm.device());
      double secs = std::chrono::duration<double>(Clock::now() - t0).count() / config.iters;

      // Checked on fresh buffers: the timed all-reduces summed in place.
      Buffers check = prepare(op, count, comm, opts);
      run_op(op, comm, check);
      int64_t wrong = check.out.ne(check.expected).sum().cpu().item<int64_t>();

      results::BenchCommRow row;
      row.op = op;
      row.count = count;
      row.bytes = count * word;
      row.type = config.dtype == "float" ? "float32" : config.dtype;
      row.redop = op == "all_reduce" || op == "reduce_scatter" ? "sum" : "none";
      row.root = op == "broadcast" ? 0 : -1;
      row.time_us = all_mean(comm, secs) * 1e6;
      row.algbw = static_cast<double>(row.bytes) / (row.time_us * 1e-6) / 1e9;
      row.busbw = row.algbw * results::bus_factor(op, comm.size());
      row.wrong = all_sum(comm, wrong);
      rows.push_back(row);
      if (on_row) on_row(row);
    }
  }
  return rows;
}

}  // namespace hpcbench::dist
