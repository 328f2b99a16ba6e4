#pragma once
// What a pipeline costs, without tensors: each stage's memory (its share of
// the model's state, the activations of the micro-batches it holds at once)
// and the step time predict gives (the schedule simulated on per-stage
// compute times, with point-to-point transfers of one micro-batch's
// activations or gradients at latency + bytes / bandwidth).
#include <cstdint>
#include <vector>

#include "specs/model_shape.h"
#include "strategies/pipeline/schedule.h"
#include "strategies/pipeline/timeline.h"

namespace hpcbench::strategies::pipeline {

struct StageMemoryInput {
  ModelShape model;
  std::vector<int64_t> layers_per_stage;  // model::stage_layer_counts
  ScheduleKind schedule = ScheduleKind::GPipe;
  int micro = 1;
  int64_t micro_rows = 1, seq = 128;
  int activation_bytes = 4;  // e: 4 in fp32, 2 under bf16/fp16 autocast
  bool dropout = true;
  bool scores = true;        // attention keeps its s² probabilities (no fused kernel)
  bool recompute = false;    // --activation-checkpointing: a layer keeps only its input
};

struct StageMemory {
  int64_t params = 0;      // the stage's parameters: its layers, the embeddings (first), the head (last)
  double state = 0;        // 16 bytes each: fp32 weights, gradients, Adam's two moments
  int held = 0;            // micro-batches whose activations it holds at once
  double activations = 0;  // at that moment
  double total() const { return state + activations; }
};

// With L_s layers on stage s, A a layer's activations per micro-batch
// (layer_activation_bytes) and k the schedule's held micro-batches (GPipe:
// M; 1F1B: min(M, P - s)):
//   activations = k · L_s · A                      without recomputation
//               = k · L_s · e·b·s·h + A            with it (each layer's input,
//                                                  and one layer recomputed)
// Throws UserError for a stage outside the cut.
StageMemory stage_memory(const StageMemoryInput& in, int stage);

struct PipelineCostInput {
  ScheduleKind schedule = ScheduleKind::GPipe;
  int micro = 1;
  std::vector<double> forward_s, backward_s;  // per stage, one micro-batch (backward includes any recompute)
  double p2p_bytes = 0;                       // one micro-batch's activations: rows · seq · hidden · wire bytes
  double p2p_latency_s = 0, p2p_bandwidth_Bps = 0;
  double optimizer_s = 0;                     // the slowest stage's optimizer step
};

struct PipelineCost {
  double step_s = 0;         // the pipeline's makespan plus the optimizer
  double busy_s = 0;         // the busiest stage's compute
  double bubble_fraction = 0;  // of the makespan, on the busiest stage
  double p2p_s = 0;          // one transfer
  double p2p_exposed_s = 0;  // how much the transfers lengthen the makespan
  double theoretical_bubble = 0;  // (P-1)/(M+P-1)
};

// Throws UserError for a bandwidth that is not positive when bytes move.
PipelineCost pipeline_cost(const PipelineCostInput& in);

}  // namespace hpcbench::strategies::pipeline
