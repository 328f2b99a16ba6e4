#pragma once
// Pipeline schedules as pure generators (no tensors): the order in which one
// stage runs the forward and backward passes of the step's micro-batches.
// GPipe (Huang et al. 2019) runs every forward, then every backward;
// 1F1B (PipeDream-Flush, Narayanan et al. 2021, as Megatron-LM runs it)
// starts backwards as soon as the last stage can, so that a stage holds the
// activations of at most P - s micro-batches instead of M. Both follow
// torch.distributed.pipelining's ScheduleGPipe and Schedule1F1B action for
// action (backwards in micro-batch order), and both have the same bubble.
#include <string>
#include <vector>

namespace hpcbench::strategies::pipeline {

enum class ScheduleKind { GPipe, OneFOneB };

// "gpipe" or "1f1b"; throws UserError naming --schedule.
ScheduleKind parse_schedule(const std::string& text);
std::string schedule_name(ScheduleKind kind);

struct Action {
  enum Type { Forward, Backward } type;
  int micro;
  bool operator==(const Action&) const = default;
};
std::string to_string(const Action& a);  // "F3", "B0"

// Stage `stage` (0-based) of `stages`, over `micro` micro-batches. Throws
// UserError naming --micro-batches / --stages for counts below 1.
std::vector<Action> stage_order(ScheduleKind kind, int stage, int stages, int micro);

// The most micro-batches whose activations the stage holds at once.
int in_flight(ScheduleKind kind, int stage, int stages, int micro);

// The share of a step the pipeline leaves a stage idle, for P equal stages,
// M micro-batches and no communication time: (P - 1) / (M + P - 1).
double theoretical_bubble(int stages, int micro);

}  // namespace hpcbench::strategies::pipeline
