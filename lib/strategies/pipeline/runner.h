#pragma once
// One pipeline stage's part of a training step: the forward and backward of
// each micro-batch in its schedule's order (schedule.h), activations received
// from the previous stage's rank and sent to the next one's, their gradients
// the other way, over the job's communicator (point to point, so that the
// step timer counts them with the collectives). The last stage computes each
// micro-batch's loss. The step's busy spans give its measured bubble
// (timeline.h).
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "strategies/pipeline/schedule.h"
#include "strategies/pipeline/stages.h"
#include "strategies/pipeline/stamps.h"
#include "strategies/pipeline/timeline.h"
#include "train/batch.h"

namespace hpcbench::train {
class StepTimer;
}

namespace hpcbench::strategies::pipeline {

struct StageLinks {
  dist::Comm* comm = nullptr;  // holds both neighbours
  int prev = -1, next = -1;    // their ranks in comm; -1 at the ends
};

struct RunnerOptions {
  ScheduleKind schedule = ScheduleKind::GPipe;
  std::string precision = "fp32";  // autocast around each forward, as every strategy
  // What crosses between stages. Activations leave a stage in this dtype
  // (the cast is part of the graph, so their gradients come back in it).
  at::ScalarType wire = at::kFloat;
  // --cuda-graph: the stage's instants are events a capture records as the
  // graph's own nodes (stamps.h).
  bool graph_events = false;
};

class StageRunner {
 public:
  StageRunner(PipelineStage stage, StageLinks links, RunnerOptions options, c10::Device device);
  ~StageRunner();
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  // Forward and backward of `micro` (M >= 1 batches, on the device, every
  // stage given the same ones: the first reads the ids, every stage the
  // attention mask, the last the answer positions), in the schedule's order
  // for M. Each micro-batch's loss is multiplied by scale x its share of the
  // rows before its backward, so the gradients are those of the mean loss
  // over all the rows times `scale`, equal micro-batches or not. Returns that
  // mean loss on the last stage (a tensor on the device; nothing waits for
  // it), undefined on the others. `timer` (may be null) gets a Forward /
  // Backward mark after each action. `timed`: the step's busy spans are
  // recorded (the last micro-step of an accumulation alone is measured).
  // At one stage nothing in it reads the host or keeps storage it made past
  // its end, so that it can be captured in a CUDA graph.
  at::Tensor step(const std::vector<train::Batch>& micro, double scale, train::StepTimer* timer = nullptr,
                  bool timed = true);
  // The last step was a replay of the captured graph (stamps.h).
  void replayed() { stamps_.replayed(); }

  // The last step's busy spans and window, in ms from its start (waits for
  // the device on accelerators).
  StageTimeline timeline();
  Bubble bubble() { return measure_bubble(timeline()); }
  // The last step's loss of each micro-batch (the last stage): views of a
  // buffer made once, which every step writes in place.
  std::vector<at::Tensor> micro_losses() const;
  // What the stage ran last step, in order (the schedule's order).
  const std::vector<Action>& ran() const { return ran_; }
  PipelineStage& stage() { return stage_; }

 private:
  void forward(int m, const train::Batch& b);
  void backward(int m, double loss_scale);
  void wait_sends();

  PipelineStage stage_;
  StageLinks links_;
  RunnerOptions opts_;
  c10::Device device_;
  std::vector<at::Tensor> inputs_, outputs_, losses_;  // per micro-batch, within the step
  at::Tensor micro_loss_;  // the last step's losses, [micro-batches]
  int micro_count_ = 0;
  std::vector<dist::Pending> sends_;
  std::vector<at::Tensor> send_buffers_;  // alive until their sends complete
  std::vector<Action> ran_;
  StepStamps stamps_;
  bool timed_ = true;  // this step's spans are recorded
};

}  // namespace hpcbench::strategies::pipeline
