#include "strategies/shard/plan.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace hpcbench::strategies::shard {

void SharedOptions::add_settings(std::vector<Setting>& out, bool) {
  out.push_back({"reduce", "--reduce-dtype",
                 "with --precision bf16/fp16: dtype of the gradient reduction, fp32, bf16 or fp16 (default: the "
                 "compute dtype)",
                 &reduce_dtype});
  out.push_back({"prefetch", "--no-prefetch",
                 "gather each unit only when it runs (no all-gather during the previous unit's compute; applies "
                 "where parameters are partitioned)",
                 &prefetch});
  out.push_back({"overlap", "--no-overlap", "finish each unit's gradient reduction before the next unit's backward",
                 &overlap});
}

void SharedOptions::validate(const std::string& precision) const {
  if (!reduce_dtype.empty() && reduce_dtype != "fp32" && reduce_dtype != "bf16" && reduce_dtype != "fp16")
    fail("--reduce-dtype {}: must be fp32, bf16 or fp16", reduce_dtype);
  if (!precision.empty() && precision != "bf16" && precision != "fp16" && !reduce_dtype.empty() &&
      reduce_dtype != "fp32")
    fail("--reduce-dtype {} needs --precision bf16 or fp16: in {} the gradients are reduced in fp32", reduce_dtype,
         precision);
}

void SharedOptions::apply(ShardingPlan& plan) const {
  plan.prefetch = prefetch;
  plan.overlap = overlap;
  plan.reduce_dtype = reduce_dtype;
}

Choice SharedOptions::resolved(Choice choice, const ShardingPlan& plan) {
  if (!plan.reduce_dtype.empty()) choice.set("reduce", plan.reduce_dtype, plan.name);
  if (!plan.shard_params) choice.set("prefetch", "on", plan.name);
  return choice;
}

size_t gather_slots(const ShardingPlan& plan, size_t units) {
  if (!plan.shard_params) return 0;
  if (!plan.reshard_after_forward) return units;
  return std::min<size_t>(plan.prefetch ? 2 : 1, units);
}

size_t grad_slots(const ShardingPlan& plan, size_t units) { return std::min<size_t>(plan.overlap ? 2 : 1, units); }

std::vector<int64_t> ring_slots(const std::vector<int64_t>& sizes, size_t slots) {
  std::vector<int64_t> out(slots, 0);
  for (size_t i = 0; i < sizes.size() && slots > 0; ++i) out[i % slots] = std::max(out[i % slots], sizes[i]);
  return out;
}

int shard_ranks(const ShardingPlan& plan, const Shape& shape) {
  if (!plan.hybrid) return shape.world();
  return plan.shard_group > 0 ? plan.shard_group : shape.gpus_per_node;
}

namespace {

int dtype_bytes(const std::string& dtype, int otherwise) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  return otherwise;
}

struct Figures {
  std::vector<int64_t> units;
  int ranks = 1;
  double c = 4;  // compute bytes
  double r = 4;  // reduce bytes
};

double sum(const std::vector<int64_t>& u) { return static_cast<double>(std::accumulate(u.begin(), u.end(), int64_t{0})); }

double slots_sum(const std::vector<int64_t>& units, size_t slots) {
  return sum(ring_slots(units, slots));
}

// The static rings a rank holds whatever the step does (buffers.h): the
// gathered units, the full gradients in the compute dtype, in the reduce
// dtype beside them when it differs, and a reduce-scatter's part.
double ring_bytes(const ShardingPlan& plan, const Figures& p) {
  const double grads = slots_sum(p.units, grad_slots(plan, p.units.size()));
  double w = p.c * slots_sum(p.units, gather_slots(plan, p.units.size())) + p.c * grads;
  if (p.r != p.c) w += p.r * grads;
  if (plan.shard_grads) w += p.r * grads / std::max(p.ranks, 1);
  return w;
}

}  // namespace

StateBytes plan_state(const ShardingPlan& plan, const MemoryInputs& in) {
  Figures p;
  p.units = in.units;
  p.ranks = shard_ranks(plan, in.shape);
  p.c = in.compute_bytes;
  p.r = dtype_bytes(plan.reduce_dtype, in.reduce_bytes);
  const double psi = sum(p.units), N = std::max(p.ranks, 1), c = p.c;
  // The fp32 master partition is memory of its own when the replicated
  // parameters are in another dtype; in fp32 it is a view of them.
  const double m = in.compute_bytes == 4 ? 0.0 : 4.0;
  StateBytes s;
  if (!plan.shard_grads && !plan.shard_params) {
    s.persistent = c * psi + 4 * psi + (8 + m) * psi / N;  // replicated params, all-reduced fp32 grads
  } else if (!plan.shard_params) {
    s.persistent = c * psi + (12 + m) * psi / N;
  } else {
    s.persistent = 16 * psi / N;  // fp32 master, its gradient, Adam's two moments
  }
  s.working_set = ring_bytes(plan, p);
  return s;
}

void plan_schedule(const ShardingPlan& plan, const StepInputs& in, StepBuilder& b) {
  const Shape& shape = in.shape;
  const ModelLayout& l = *in.layout;
  const Group full{shape.nodes, shape.gpus_per_node};
  const int group = shard_ranks(plan, shape);
  if (group < 1 || shape.world() % group != 0)
    fail("shard groups of {} ranks do not divide {} ranks", group, shape.world());
  // A shard group inside a node, or whole nodes; its replicas one per node
  // (a group per node) or several per node, crossing the node's NICs together.
  const Group shard = group <= shape.gpus_per_node ? Group{1, group} : Group{group / shape.gpus_per_node, shape.gpus_per_node};
  const int replicas = shape.world() / group;
  const int replicas_per_node = group <= shape.gpus_per_node ? shape.gpus_per_node / group : 1;
  const Group across{replicas / replicas_per_node, replicas_per_node, group <= shape.gpus_per_node ? group : 1};
  const bool regather = plan.shard_params && plan.reshard_after_forward;
  const bool prefetch = plan.prefetch && plan.shard_params;
  const int reduce_bytes = dtype_bytes(plan.reduce_dtype, in.reduce_bytes);
  const size_t n = l.unit_numel.size();
  auto bytes = [&](size_t u, int per) { return static_cast<double>(per) * static_cast<double>(l.unit_numel[u]); };

  for (int m = 0; m < in.grad_accum; ++m) {
    b.compute(in.base.other_s, "other");
    // Forward: unit u needs its gather; with prefetch the next unit's gather
    // is issued before this unit's compute.
    std::vector<size_t> ag(n, SIZE_MAX);
    auto gather = [&](size_t u, bool when) {
      if (when && ag[u] == SIZE_MAX) ag[u] = b.collective("all_gather", bytes(u, in.compute_bytes), shard);
    };
    for (size_t u = 0; u < n; ++u) {
      gather(u, plan.shard_params);
      if (prefetch && u + 1 < n) gather(u + 1, plan.shard_params);
      std::vector<size_t> after;
      if (ag[u] != SIZE_MAX) after.push_back(ag[u]);
      b.compute(in.base.forward_s * l.unit_share[u], "forward", after);
    }
    // Backward, units in reverse: gathered again (full sharding), the unit's
    // gradients reduced as soon as they are complete.
    std::fill(ag.begin(), ag.end(), SIZE_MAX);
    for (size_t u = n; u-- > 0;) {
      gather(u, regather);
      if (prefetch && u > 0) gather(u - 1, regather);
      std::vector<size_t> after;
      if (ag[u] != SIZE_MAX) after.push_back(ag[u]);
      b.compute(in.base.backward_s * l.unit_share[u], "backward", after);
      size_t red;
      if (!plan.shard_grads) {
        red = b.collective("all_reduce", bytes(u, reduce_bytes), full);
      } else {
        red = b.collective("reduce_scatter", bytes(u, reduce_bytes), shard);
        if (plan.hybrid && replicas > 1)
          red = b.collective("all_reduce", bytes(u, reduce_bytes) / group, across);
      }
      if (!plan.overlap) b.compute(0, "wait", {red});
    }
    b.wait_all("wait");
  }
  // AdamW over this rank's partition: a pass over its elements.
  b.compute(in.base.optimizer_s / group, "optimizer");
  if (!plan.shard_params) {  // the updated replicated parameters
    b.collective("all_gather", in.compute_bytes * static_cast<double>(l.parameters), full);
    b.wait_all("wait");
  }
}

std::string plan_exposed_advice(const ShardingPlan& plan) {
  if (!plan.overlap) return "overlap the reduction with backward again (drop --no-overlap)";
  if (!plan.prefetch && plan.shard_params) return "prefetch the next unit's parameters (drop --no-prefetch)";
  return "with --precision bf16, reduce in bf16 (--reduce-dtype bf16) to halve the bytes; across nodes, "
         "--sharding hybrid keeps the parameter gathers inside a node";
}

}  // namespace hpcbench::strategies::shard
