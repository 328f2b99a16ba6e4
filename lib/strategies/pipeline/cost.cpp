#include "strategies/pipeline/cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hpcbench::strategies::pipeline {

StageMemory stage_memory(const StageMemoryInput& in, int stage) {
  const int stages = static_cast<int>(in.layers_per_stage.size());
  if (stage < 0 || stage >= stages) fail("internal: stage {} of {}", stage, stages);
  const auto& m = in.model;
  const int64_t layers = in.layers_per_stage[size_t(stage)];
  StageMemory out;
  out.params = layers * m.layer_params() + (stage == 0 ? m.embedding_params() : 0) +
               (stage + 1 == stages ? m.head_params() : 0);
  out.state = 16.0 * static_cast<double>(out.params);
  out.held = in_flight(in.schedule, stage, stages, in.micro);
  const double a = layer_activation_bytes(m, in.micro_rows, in.seq, in.activation_bytes, in.dropout, in.scores);
  const double input = static_cast<double>(in.activation_bytes) * static_cast<double>(in.micro_rows * in.seq * m.hidden);
  out.activations = in.recompute ? out.held * layers * input + a : out.held * layers * a;
  return out;
}

PipelineCost pipeline_cost(const PipelineCostInput& in) {
  PipelineCost out;
  if (in.p2p_bytes > 0 && !(in.p2p_bandwidth_Bps > 0))
    fail("pipeline cost: {} bytes per transfer over a bandwidth of {} B/s", in.p2p_bytes, in.p2p_bandwidth_Bps);
  out.p2p_s = in.p2p_bytes > 0 ? in.p2p_latency_s + in.p2p_bytes / in.p2p_bandwidth_Bps : 0;
  SimulationInput sim{in.schedule, in.micro, in.forward_s, in.backward_s, out.p2p_s};
  auto with = simulate(sim);
  sim.p2p = 0;
  auto without = simulate(sim);
  out.p2p_exposed_s = with.makespan - without.makespan;
  out.step_s = with.makespan + in.optimizer_s;
  for (auto& t : with.stages) {
    auto b = measure_bubble(t);
    if (b.busy >= out.busy_s) {
      out.busy_s = b.busy;
      out.bubble_fraction = b.fraction();
    }
  }
  out.theoretical_bubble = theoretical_bubble(static_cast<int>(in.forward_s.size()), in.micro);
  return out;
}

}  // namespace hpcbench::strategies::pipeline
