#pragma once
// One optimizer step of each strategy at N ranks, built as the strategy
// issues it (compute on one stream, collectives on another, each collective
// waiting for the compute issued before it, as c10d orders them) and
// replayed (replay.h). Inputs: a one-device baseline's phase times, the
// model's layout (layout.h) and a collective cost model (collective.h).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/engine_policy.h"
#include "predict/collective.h"
#include "predict/layout.h"
#include "predict/replay.h"
#include "specs/spec.h"

namespace hpcbench::predict {

// A measured (or published) one-device step, per micro-batch of `batch`
// sequences except the optimizer, which is per optimizer step.
struct Baseline {
  std::string source;
  std::string model, precision, device, device_name, data;
  int64_t seq = 0, batch = 0, grad_accum = 1;
  double forward_s = 0, backward_s = 0, other_s = 0;  // per micro-step (other: data, the rest of the step)
  double optimizer_s = 0;                             // per optimizer step
  double step_s = 0;                                  // measured step (all micro-steps and the optimizer)
  bool phases_assumed = false;  // the source gives throughput only: forward:backward split 1:2, no optimizer time
  double step_noise = 0;        // its steps' standard deviation / mean (0: not recorded, as in a published row)
  // The engine it ran on, as its record names it (eager fp32 weights where
  // the record says nothing), and the model state it measured (0: not recorded).
  EnginePolicy engine;
  double model_state_bytes = 0;
  double samples_per_s() const { return static_cast<double>(batch * grad_accum) / step_s; }
};

using strategies::Shape;

struct StepOptions {
  int compute_bytes = 4;     // gathered parameters: 4 (fp32, tf32) or 2 (bf16, fp16)
  int reduce_bytes = 4;      // sharded gradients' reduction dtype, where a strategy's options do not name one
  int param_grad_bytes = 4;  // gradients of the fp32 parameters under autocast; 2 with an fp16 hook / apex O2
  int grad_accum = 1;        // micro-steps per optimizer step at this shape
  // Weights resident in the compute dtype with fp32 masters (--fused under
  // bf16): the replicated strategies' memory model counts both copies.
  bool resident = false;
};

struct Prediction {
  std::string strategy;
  Shape shape;
  int grad_accum = 1;
  double step_s = 0, compute_s = 0, optimizer_s = 0, other_s = 0, exposed_s = 0, comm_s = 0;
  std::map<std::string, double> exposed_by_op;
  double samples_per_s = 0, speedup = 0, efficiency = 0;
  double memory_bytes = 0, memory_persistent = 0, memory_working = 0;
};

// The step's tasks as the strategy's spec issues them, collectives costed
// (exposed for tests and for the report of what ran). Throws UserError when
// the strategy cannot run at `shape`.
std::vector<Task> step_schedule(const Baseline& b, const Layout& l, const strategies::Choice& s, const Shape& shape,
                                const CommModel& comm, const StepOptions& o);

// The model state a rank holds under `o` (the spec's memory formula,
// docs/memory.md): what predict_step reports and `plan` prunes by.
strategies::StateBytes model_state(const strategies::Choice& s, const Layout& l, const Shape& shape,
                                   const StepOptions& o);

Prediction predict_step(const Baseline& b, const Layout& l, const strategies::Choice& s, const Shape& shape,
                        const CommModel& comm, const StepOptions& o);

}  // namespace hpcbench::predict
