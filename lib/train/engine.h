#pragma once
// The one place a run's engine is decided (core/engine_policy.h): what its
// settings ask for (--precision, --fused, --cuda-graph, --engine), what its
// strategy declares it runs on (Spec::engine), what the device and the other
// settings allow.
#include <optional>

#include "core/engine_policy.h"
#include "specs/spec.h"
#include "train/config.h"

namespace hpcbench::train {

// Whether `--engine auto` turns the graph and the fused model on by itself
// on a CUDA device. False until a GPU run has shown them equal to eager:
// tools/gpu/validate.sh's engine phase at batch 4, 8 and 32 (bf16, bert-base)
// with the graphed and fused losses inside the eager runs' envelope. Flip it
// here, and only here, with that run's results folder named beside it.
inline constexpr bool kAutoEngineShown = false;

// What the device side adds to the choice (unknown before the run's device
// is: then `auto` resolves to what the flags ask for).
struct EngineDevice {
  bool cuda = false;                 // the run's device is CUDA (a graph can be captured)
  bool host_blocking_comm = false;   // Gloo's collectives, which a graph cannot capture
  bool auto_shown = kAutoEngineShown;  // the tests set it to see `auto` resolve either way
};

// --fused asks for the fused model (packed QKV, the fused kernels) and,
// under bf16, weights resident in bf16 with fp32 masters; --cuda-graph for
// the captured step; --engine auto adds whichever the strategy declares once
// kAutoEngineShown, on CUDA. A setting asked for that the strategy does not
// declare, or that the precision or activation checkpointing rule out, is a
// UserError naming the flag, the strategy and the reason, raised before
// anything starts. The policy's `reason` says how it was chosen. `job`: the
// job's shape where it is known (every run knows it before launch), for a
// strategy whose declarations depend on it (Spec::engine_on); without it,
// what the strategy declares for any job.
EnginePolicy choose_engine(const TrainConfig& cfg, const strategies::Choice& choice, const EngineDevice& device = {},
                           const std::optional<strategies::Shape>& job = std::nullopt);

}  // namespace hpcbench::train
