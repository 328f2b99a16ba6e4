#include "predict/step_model.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "strategies/shard/memory.h"

namespace hpcbench::predict {

StrategySpec parse_strategy(const std::string& text) {
  StrategySpec s;
  s.label = text;
  std::string t = text;
  auto strip = [&](const std::string& suffix) {
    if (!t.ends_with(suffix)) return false;
    t.resize(t.size() - suffix.size());
    return true;
  };
  if (strip("-no-prefetch")) s.prefetch = false;
  if (strip("-no-overlap")) s.overlap = false;
  if (strip("-no-prefetch")) s.prefetch = false;
  if (t == "baseline" || t == "dp" || t == "ddp") {
    s.name = t;
  } else if (t == "zero-1" || t == "zero-2" || t == "zero-3") {
    s.name = "zero";
    s.stage = t.back() - '0';
  } else if (t == "fsdp" || t == "fsdp-full" || t == "fsdp-grad-op" || t == "fsdp-hybrid") {
    s.name = "fsdp";
    s.stage = 3;
    s.sharding = t == "fsdp" ? "full" : t.substr(5);
  } else {
    fail("--strategies {}: use baseline, dp, ddp, zero-1, zero-2, zero-3, fsdp, fsdp-grad-op, fsdp-hybrid "
         "(sharded and ddp ones may end in -no-overlap, zero-3/fsdp in -no-prefetch)", text);
  }
  if (!s.prefetch && !(s.stage == 3)) fail("--strategies {}: -no-prefetch applies to zero-3 and fsdp only", text);
  return s;
}

namespace {

// Issues tasks as a strategy's host code would: a collective waits for the
// compute issued before it (c10d makes the NCCL stream wait for the current
// stream), compute waits for what it was told to.
struct Builder {
  const CommModel& comm;
  std::vector<Task> tasks;
  std::vector<size_t> outstanding;  // collectives not yet waited for
  size_t last_compute = SIZE_MAX;

  size_t compute(double s, const std::string& kind, std::vector<size_t> after = {}) {
    tasks.push_back({Stream::compute, s, std::move(after), kind});
    return last_compute = tasks.size() - 1;
  }
  size_t collective(const std::string& op, double bytes, const Group& g) {
    std::vector<size_t> after;
    if (last_compute != SIZE_MAX) after.push_back(last_compute);
    // A reduce to one rank moves what a broadcast moves, the other way.
    tasks.push_back({Stream::comm, comm.seconds(op == "reduce" ? "broadcast" : op, bytes, g), after, op});
    outstanding.push_back(tasks.size() - 1);
    return tasks.size() - 1;
  }
  // The compute stream waits for every outstanding collective.
  void wait_all(const std::string& kind) {
    compute(0, kind, outstanding);
    outstanding.clear();
  }
};

// Backward's gradient-ready times (from backward's start) of every
// parameter: units in reverse order, each taking its share of backward, the
// parameters inside a unit ready in reverse order in proportion to their size.
std::vector<double> ready_times(const Layout& l, double backward_s) {
  std::vector<double> ready(l.param_numel.size(), 0);
  double t = 0;
  for (size_t u = l.unit_numel.size(); u-- > 0;) {
    double dur = backward_s * l.unit_share[u];
    double done = 0;
    for (size_t k = l.param_numel.size(); k-- > 0;) {
      if (l.param_unit[k] != u) continue;
      done += static_cast<double>(l.param_numel[k]);
      ready[k] = t + dur * done / static_cast<double>(l.unit_numel[u]);
    }
    t += dur;
  }
  return ready;
}

void ddp_micro(Builder& b, const Baseline& base, const Layout& l, const StrategySpec& s, const Group& g, bool sync,
               double elem_bytes) {
  b.compute(base.other_s, "other");
  b.compute(base.forward_s, "forward");
  if (!sync) {
    b.compute(base.backward_s, "backward");
    return;
  }
  auto ready = ready_times(l, base.backward_s);
  double at = 0;  // backward issued so far
  for (auto& bucket : l.buckets) {
    double r = 0, bytes = 0;
    for (auto k : bucket) {
      r = std::max(r, ready[k]);
      bytes += elem_bytes * static_cast<double>(l.param_numel[k]);
    }
    if (s.overlap && r > at) {
      b.compute(r - at, "backward");
      at = r;
    }
    if (s.overlap) b.collective("all_reduce", bytes, g);
  }
  if (base.backward_s > at) b.compute(base.backward_s - at, "backward");
  if (!s.overlap)
    for (auto& bucket : l.buckets) {
      double bytes = 0;
      for (auto k : bucket) bytes += elem_bytes * static_cast<double>(l.param_numel[k]);
      b.collective("all_reduce", bytes, g);
    }
  b.wait_all("wait");
}

void sharded_micro(Builder& b, const Baseline& base, const Layout& l, const StrategySpec& s, const Shape& shape,
                   const StepOptions& o) {
  const Group full{shape.nodes, shape.gpus_per_node};
  const bool hybrid = s.sharding == "hybrid";
  const Group shard = hybrid ? Group{1, shape.gpus_per_node} : full;
  const Group across{shape.nodes, 1, shape.gpus_per_node};  // hybrid: the ranks holding the same shard, one a node
  const bool gather_params = s.stage == 3;
  const bool regather = gather_params && s.sharding != "grad-op";
  const size_t n = l.unit_numel.size();
  auto bytes = [&](size_t u, int per) { return static_cast<double>(per) * static_cast<double>(l.unit_numel[u]); };

  b.compute(base.other_s, "other");
  // Forward: unit u needs its gather; with prefetch the next unit's gather is
  // issued before this unit's compute.
  std::vector<size_t> ag(n, SIZE_MAX);
  auto gather = [&](size_t u) {
    if (gather_params && ag[u] == SIZE_MAX) ag[u] = b.collective("all_gather", bytes(u, o.compute_bytes), shard);
  };
  for (size_t u = 0; u < n; ++u) {
    gather(u);
    if (s.prefetch && u + 1 < n) gather(u + 1);
    std::vector<size_t> after;
    if (ag[u] != SIZE_MAX) after.push_back(ag[u]);
    b.compute(base.forward_s * l.unit_share[u], "forward", after);
  }
  // Backward, units in reverse: gathered again (full sharding), the unit's
  // gradients reduced as soon as they are complete.
  std::fill(ag.begin(), ag.end(), SIZE_MAX);
  auto bgather = [&](size_t u) {
    if (regather && ag[u] == SIZE_MAX) ag[u] = b.collective("all_gather", bytes(u, o.compute_bytes), shard);
  };
  for (size_t u = n; u-- > 0;) {
    bgather(u);
    if (s.prefetch && u > 0) bgather(u - 1);
    std::vector<size_t> after;
    if (ag[u] != SIZE_MAX) after.push_back(ag[u]);
    b.compute(base.backward_s * l.unit_share[u], "backward", after);
    size_t red;
    if (s.stage == 1) {
      red = b.collective("all_reduce", bytes(u, o.reduce_bytes), full);
    } else {
      red = b.collective("reduce_scatter", bytes(u, o.reduce_bytes), shard);
      if (hybrid && shape.nodes > 1) {
        red = b.collective("all_reduce", bytes(u, o.reduce_bytes) / shape.gpus_per_node, across);
      }
    }
    if (!s.overlap) b.compute(0, "wait", {red});
  }
  b.wait_all("wait");
}

}  // namespace

std::vector<Task> step_schedule(const Baseline& base, const Layout& l, const StrategySpec& s, const Shape& shape,
                                const CommModel& comm, const StepOptions& o) {
  if (shape.nodes < 1 || shape.gpus_per_node < 1) fail("--nodes and --gpus-per-node must be at least 1");
  if (o.grad_accum < 1) fail("gradient accumulation {} must be at least 1", o.grad_accum);
  const int world = shape.world();
  const Group full{shape.nodes, shape.gpus_per_node};
  Builder b{comm, {}, {}, SIZE_MAX};
  const double params = static_cast<double>(l.parameters);
  if (s.name == "baseline") {
    if (world != 1) fail("--strategies baseline runs on one device (asked for {})", world);
    for (int m = 0; m < o.grad_accum; ++m) {
      b.compute(base.other_s, "other");
      b.compute(base.forward_s, "forward");
      b.compute(base.backward_s, "backward");
    }
    b.compute(base.optimizer_s, "optimizer");
  } else if (s.name == "dp") {
    // One process drives the node's devices: the replicas get the
    // parameters from the first device (broadcast), the micro-batch is
    // scattered, the replicas' gradients are summed onto the first device
    // (reduce: the cost of a broadcast), the optimizer runs there alone.
    if (shape.nodes != 1) fail("--strategies dp: one process drives one node's devices (asked for {} nodes)", shape.nodes);
    for (int m = 0; m < o.grad_accum; ++m) {
      b.collective("broadcast", 4 * params, full);
      b.wait_all("wait");
      b.compute(base.other_s, "other");
      b.compute(base.forward_s, "forward");
      b.compute(base.backward_s, "backward");
      b.collective("reduce", 4 * params, full);
      b.wait_all("wait");
    }
    b.compute(base.optimizer_s, "optimizer");
  } else if (s.name == "ddp") {
    for (int m = 0; m < o.grad_accum; ++m) ddp_micro(b, base, l, s, full, m + 1 == o.grad_accum, o.ddp_bytes);
    b.compute(base.optimizer_s, "optimizer");
  } else {
    const Group shard = s.sharding == "hybrid" ? Group{1, shape.gpus_per_node} : full;
    for (int m = 0; m < o.grad_accum; ++m) sharded_micro(b, base, l, s, shape, o);
    // AdamW over this rank's partition: a pass over its elements.
    b.compute(base.optimizer_s / shard.ranks(), "optimizer");
    if (s.stage < 3) {  // zero 1/2: the updated replicated parameters
      b.collective("all_gather", o.compute_bytes * params, full);
      b.wait_all("wait");
    }
  }
  (void)world;
  return std::move(b.tasks);
}

Prediction predict_step(const Baseline& base, const Layout& l, const StrategySpec& s, const Shape& shape,
                        const CommModel& comm, const StepOptions& o) {
  auto tasks = step_schedule(base, l, s, shape, comm, o);
  auto r = replay(tasks);
  Prediction p;
  p.strategy = s.label;
  p.shape = shape;
  p.grad_accum = o.grad_accum;
  p.step_s = r.makespan;
  for (auto& t : tasks) {
    if (t.stream != Stream::compute) continue;
    if (t.kind == "optimizer") p.optimizer_s += t.seconds;
    else if (t.kind == "other") p.other_s += t.seconds;
    else p.compute_s += t.seconds;
  }
  p.exposed_s = r.exposed;
  p.comm_s = r.comm;
  p.exposed_by_op = r.exposed_by_kind;
  const int world = shape.world();
  p.samples_per_s = static_cast<double>(base.batch * o.grad_accum * world) / p.step_s;
  p.speedup = p.samples_per_s / base.samples_per_s();
  p.efficiency = p.speedup / world;

  strategies::shard::MemoryPlan plan;
  plan.strategy = s.name;
  plan.stage = s.stage;
  plan.sharding = s.sharding;
  plan.ranks = s.sharding == "hybrid" ? shape.gpus_per_node : world;
  plan.units = l.unit_numel;
  plan.compute_bytes = o.compute_bytes;
  plan.prefetch = s.prefetch && s.stage == 3;
  plan.overlap = s.overlap;
  plan.reduce_bytes = o.reduce_bytes;
  auto mem = strategies::shard::theoretical_state(plan);
  p.memory_persistent = mem.persistent;
  p.memory_working = mem.working_set;
  p.memory_bytes = mem.total();
  return p;
}

}  // namespace hpcbench::predict
