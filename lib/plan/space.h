#pragma once
// The layouts `hpcbench plan` considers for one job: every registered
// strategy's search space (specs/search.h) on the job's shape, each with and
// without recomputation, each replica's rows in 1, 2, 4, ... micro-steps
// (gradient accumulation) while they divide evenly, checked by the specs'
// own checks (the ones `run` makes before it starts) and against the global
// batch. What a check refuses is counted by its reason, not tried.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "specs/search.h"

namespace hpcbench::plan {

struct Candidate {
  strategies::Choice choice;
  std::string precision;   // --precision: fp32, tf32, bf16 or fp16
  bool recompute = false;  // --activation-checkpointing
  int replicas = 1;        // data-parallel replicas the global batch splits over
  int64_t rows = 0;        // sequences a replica takes per optimizer step (global batch / replicas)
  int accum = 1;           // micro-steps they are cut into (--grad-accum)
  // The engine setting searched (EnginePolicy::name(): eager, graph, fused,
  // graph+fused); "" where the engine is not searched and stays the baseline's.
  std::string engine;
  int64_t micro() const { return rows / accum; }  // --batch-size
  // "zero:stage=3 x4 +recompute bf16 graph": the label, the accumulation,
  // recomputation, the precision, the engine where searched
  std::string name() const;
};

// Layouts refused, by reason ("the precision", "the strategy's options",
// "the job's shape", "the model", "the global batch", "the micro-batches",
// "the engine", "memory").
struct Refusals {
  std::map<std::string, int64_t> by_reason;
  void add(const std::string& reason) { ++by_reason[reason]; }
  int64_t total() const;
};

struct SpaceInputs {
  strategies::SearchInputs job;  // shape, model, the baseline's precision
  int64_t global_batch = 0;      // sequences per optimizer step
  // The precisions searched beside job.precision, each with "" or why it
  // cannot be (its layouts enumerated and refused by "the precision").
  // Empty: job.precision alone.
  std::vector<std::pair<std::string, std::string>> precisions;
};

struct Space {
  std::vector<Candidate> candidates;
  int64_t enumerated = 0;  // candidates + refused
  Refusals refused;
  // Strategies not searched, each with why (one process drives several
  // devices: `sweep` leaves those out by default too).
  std::vector<std::string> not_searched;
  // Precisions refused, each with why ("tf32: ...").
  std::vector<std::string> precisions_refused;
};

// Throws UserError naming --global-batch when it is not positive.
Space enumerate(const SpaceInputs& in);

}  // namespace hpcbench::plan
