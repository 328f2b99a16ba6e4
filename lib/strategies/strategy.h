#pragma once
// The one small interface every parallel strategy implements. The trainer owns
// the loop, the data order, the optimizer schedule and the timing; a strategy
// decides how one micro-batch's forward/backward runs and how gradients meet.
// A strategy is a folder here (its spec, spec.h, and this class's
// implementation) and one line in registry.inc.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "core/engine_policy.h"
#include "model/bert.h"
#include "specs/spec.h"
#include "strategies/updater.h"
#include "train/batch.h"
#include "train/optimizer.h"
#include "train/step_timer.h"

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::strategies {

struct StrategyContext {
  c10::Device device{c10::kCPU};
  int rank = 0;
  int world_size = 1;
  // The job's communicator; null when the run is a single process without
  // one (the one-device reference, one process driving several devices).
  std::shared_ptr<dist::Comm> comm;
  // Each rank's node, in rank order (SLURM's node names on a cluster): what
  // groups of a node's ranks are cut from. Empty: every rank on one node.
  std::vector<std::string> hosts;
  train::OptimizerConfig optimizer;  // what the updater's AdamW is built with
  int64_t batch_size = 0;            // --batch-size: rows of a micro-step per device (0: not known)
  // The run's engine (train/engine.h), its precision included: the model was built with its QKV
  // layout and kernels; with resident weights a strategy keeps them in the
  // compute dtype with fp32 masters and runs forward without autocast
  // (master_weights.h). A strategy is handed only what its spec's engine()
  // declares.
  EnginePolicy engine;
};

// Where this process sits in the job, as set-up found it. The trainer reads
// the data, sizes the global batch and averages the loss from it, so that a
// rank need not be a data-parallel replica (pipeline stages, tensor shards).
struct Topology {
  // Devices this process drives: it is handed batch_size x devices rows per
  // micro-step, so that --batch-size stays per device (dp's replicas).
  int devices = 1;
  // Data-parallel replicas of the model in the job: the global batch is
  // batch_size x accumulation x replicas.
  int replicas = 1;
  // Processes that read distinct samples, and this one's index among them:
  // each epoch is split over them as DistributedSampler splits it.
  int data_ranks = 1;
  int data_rank = 0;
  // Whether this process reads batches at all (others are handed an empty
  // one), and whether its forward_backward's loss is one the job's loss is
  // the mean of.
  bool reads_batches = true;
  bool computes_loss = true;
  std::string options;            // strategy_options as the run records them (options resolved, facts)
  double state_theory_bytes = 0;  // the memory model's figure for this rank (docs/memory.md)
  double bubble_theory = -1;      // a pipeline's (P - 1) / (M + P - 1); -1: no pipeline
};

// What set-up hands the trainer: where this rank sits, and the updater, the
// optimizer that steps what this rank holds (updater.h). The updater refers
// to the strategy's state, so it must not outlive the strategy.
struct SetUp {
  Topology topology;
  std::unique_ptr<Updater> updater;
};

// What a step measured beyond the step timer's phases (-1: nothing): a
// pipeline stage's idle time within its step window (its bubble).
struct StepFacts {
  double idle_ms = -1, window_ms = -1;
};

// Every process one device and a data-parallel replica of the model: the
// data split over the ranks.
Topology replica_topology(const StrategyContext& ctx);

// The capture contract: what a strategy that declares capture (Spec::engine)
// and its Updater must hold between the step's first mark and its end, so
// that one recorded CUDA graph can replay the step (docs/gpu.md, "CUDA graph"):
// - storage a replay touches is made before the capture and reused: nothing
//   made before the step is freed in it, nothing it makes outlives it
//   (HPCBENCH_CHECK_ALLOC=1, test_cuda_graph);
// - no host reads of device values (HPCBENCH_CHECK_SYNC=1, test_cuda_graph);
// - collectives issued in the same order on every rank, from the same code
//   path every step (no per-step hook registration);
// - learning rate and step counts as device tensors (the loop fills them);
// - one step body: the eager step is the same code, not captured
//   (run/loop.cpp step_body; bit for bit over 20 steps, test_cuda_graph);
// - the graph's pool made after the allocator's cache is emptied
//   (train/cuda_graph.cpp), so that the memory column counts it.
class Strategy {
 public:
  virtual ~Strategy() = default;
  // Once, before training: the model is on ctx.device with its initial
  // weights; the strategy makes it its own (replicas broadcast from rank 0,
  // shards cut, ...) and says where this rank sits and how it steps.
  virtual SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) = 0;
  // Forward and backward of one micro-batch (already on the device); `scale`
  // multiplies the loss before backward (accumulation and fp16 loss scaling).
  // `last_micro` is true on the micro-step that ends an accumulation, when
  // gradients must be synchronised. Returns the unscaled loss (a tensor, so
  // that nothing synchronises here).
  virtual at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch,
                                      double scale, bool last_micro, train::StepTimer& timer) = 0;
  // After the last micro-step: wait for outstanding communication so the
  // gradients are final. Communication is timed by the step timer, which the
  // job's Comm reports to (train/step_timer.h); strategies only issue and
  // wait.
  virtual void finish_gradients(train::StepTimer& timer) {}
  // After the step's timer has ended (its synchronisation is done): what the
  // step measured that the timer does not.
  virtual StepFacts step_facts() { return {}; }
};

// The strategy `choice` names, ready for setup.
std::unique_ptr<Strategy> make_strategy(const Choice& choice);

// A strategy from elsewhere (a test's) beside the registry's own: its spec
// joins the registry (registry.h) and `make` builds it.
void add_strategy(const Spec& spec, std::unique_ptr<Strategy> (*make)(const Choice&));

}  // namespace hpcbench::strategies
