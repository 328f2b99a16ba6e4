#include "strategies/shard/memory.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace hpcbench::strategies::shard {

namespace {

double sum(const std::vector<int64_t>& u) { return static_cast<double>(std::accumulate(u.begin(), u.end(), int64_t{0})); }

// Bytes of the reduction still in flight while unit i's gradients are
// reduced: the unit after it (backward runs last unit first) was reduced
// just before, and with overlap it completes only now.
double in_flight(const MemoryPlan& p, size_t i, bool scatter) {
  if (!p.overlap || i + 1 >= p.units.size()) return 0.0;
  const double u = static_cast<double>(p.units[i + 1]);
  return p.reduce_bytes * u * (scatter ? 1.0 + 1.0 / std::max(p.ranks, 1) : 1.0);
}

// zero 1/2: one unit's full gradients before their reduction.
double replicated_working_set(const MemoryPlan& p, bool scatter) {
  double w = 0;
  for (size_t i = 0; i < p.units.size(); ++i)
    w = std::max(w, p.compute_bytes * static_cast<double>(p.units[i]) + in_flight(p, i, scatter));
  return w;
}

// Full sharding: a unit is gathered for its forward and again for its
// backward, where its full gradients join it until they are reduced. With
// prefetch the neighbour's gather is in flight at the same time: the next
// unit in forward, the previous one (the next to run) in backward.
double full_shard_working_set(const MemoryPlan& p) {
  const auto& u = p.units;
  const double c = p.compute_bytes;
  double w = 0;
  const size_t n = u.size();
  for (size_t i = 0; i < n; ++i) {
    double ui = static_cast<double>(u[i]);
    double before = p.prefetch && i > 0 ? static_cast<double>(u[i - 1]) : 0.0;
    double after = p.prefetch && i + 1 < n ? static_cast<double>(u[i + 1]) : 0.0;
    w = std::max({w, c * (2 * ui + before) + in_flight(p, i, true), c * (ui + after)});
  }
  return w;
}

// SHARD_GRAD_OP: every unit stays gathered from its forward until its
// gradients are reduced, which backward does last unit first; when unit i
// reduces, units 0..i are gathered and unit i's gradients are whole.
double grad_op_working_set(const MemoryPlan& p) {
  double w = 0, prefix = 0;
  for (size_t i = 0; i < p.units.size(); ++i) {
    const double x = static_cast<double>(p.units[i]);
    prefix += x;
    w = std::max(w, p.compute_bytes * (prefix + x) + in_flight(p, i, true));
  }
  return w;
}

}  // namespace

StateBytes theoretical_state(const MemoryPlan& p) {
  const double psi = sum(p.units), N = std::max(p.ranks, 1), c = p.compute_bytes;
  // The fp32 master partition is memory of its own when the replicated
  // parameters are in another dtype; in fp32 zero 1/2 it is a view of them.
  const double m = p.compute_bytes == 4 ? 0.0 : 4.0;
  StateBytes s;
  if (p.strategy == "ddp" || p.strategy == "baseline" || p.strategy == "dp") {
    s.persistent = 16 * psi;
  } else if (p.strategy == "zero" && p.stage == 1) {
    s.persistent = c * psi + 4 * psi + (8 + m) * psi / N;  // replicated params, all-reduced fp32 grads
    s.working_set = replicated_working_set(p, false);
  } else if (p.strategy == "zero" && p.stage == 2) {
    s.persistent = c * psi + (12 + m) * psi / N;
    s.working_set = replicated_working_set(p, true);
  } else if ((p.strategy == "zero" && p.stage == 3) ||
             (p.strategy == "fsdp" && (p.sharding == "full" || p.sharding == "hybrid"))) {
    s.persistent = 16 * psi / N;  // fp32 master, its gradient, Adam's two moments
    s.working_set = full_shard_working_set(p);
  } else if (p.strategy == "fsdp" && p.sharding == "grad-op") {
    s.persistent = 16 * psi / N;
    s.working_set = grad_op_working_set(p);
  } else {
    fail("no memory model for strategy {} (stage {}, sharding {})", p.strategy, p.stage, p.sharding);
  }
  return s;
}

double replicated_state_bytes(const std::string& strategy, int64_t parameters) {
  MemoryPlan m;
  m.strategy = strategy;
  m.units = {parameters};
  return theoretical_state(m).total();
}

}  // namespace hpcbench::strategies::shard
