#pragma once
// The pipeline bubble, measured and simulated, without tensors.
//
// Measured: a stage records when each of its forward and backward
// computations ran within its step; whatever part of the step no computation
// covers is the stage's idle time (waiting for the previous stage's
// activations, the next one's gradients, or for its sends), its bubble.
//
// Simulated: the same schedules run on given per-micro-batch compute times
// and a point-to-point transfer time, each action starting when its stage is
// free and its input has arrived. With P equal stages and free transfers the
// simulated bubble is the textbook (P - 1) / (M + P - 1); the simulation is
// what predict uses for unequal stages and real transfer times.
#include <vector>

#include "strategies/pipeline/schedule.h"

namespace hpcbench::strategies::pipeline {

struct Span {
  double begin = 0, end = 0;
};

struct StageTimeline {
  double begin = 0, end = 0;  // the stage's step
  std::vector<Span> busy;     // its computations, in any order (overlaps counted once)
};

struct Bubble {
  double window = 0;  // end - begin
  double busy = 0;    // the union of the computations, clipped to the window
  double idle() const { return window - busy; }
  double fraction() const { return window > 0 ? idle() / window : 0; }
};

Bubble measure_bubble(const StageTimeline& t);

struct SimulationInput {
  ScheduleKind kind = ScheduleKind::GPipe;
  int micro = 1;
  std::vector<double> forward, backward;  // per stage, one micro-batch's compute time
  double p2p = 0;                         // one transfer of activations or gradients between neighbours
};

struct Simulation {
  double makespan = 0;                   // first forward's start to the last backward's end
  std::vector<StageTimeline> stages;     // each over [0, makespan]
  std::vector<std::vector<Action>> order;  // what each stage ran, in order
  std::vector<std::vector<Span>> spans;    // when, action by action
};

// Throws UserError when the input is not a pipeline (no stage, negative
// times) and "internal" when the schedules deadlock (they do not).
Simulation simulate(const SimulationInput& in);

}  // namespace hpcbench::strategies::pipeline
