#pragma once
// The one engine behind `zero` (stages 1-3, as DeepSpeed defines them) and
// `fsdp` (FULL_SHARD, SHARD_GRAD_OP): what differs between them is which of
// optimizer states, gradients and parameters are partitioned, and when
// gathered parameters are freed again; see ShardingPlan.
//
// Units (the embeddings, each encoder layer, the QA head) each hold up to two
// flat parameters (decayed / not decayed, so that AdamW's groups survive the
// flattening). Gradients are reduced unit by unit during backward, on every
// micro-step (accumulating into the reduced buffer), so that the full
// gradients of only one unit exist at a time. The optimizer steps this rank's
// partition; zero 1/2 then all-gather the updated parameters, zero 3 / fsdp
// gather each unit just before its forward and again before its backward.
#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "dist/process_group.h"
#include "model/sharding_units.h"
#include "strategies/shard/flat_param.h"
#include "strategies/shard/plan.h"
#include "strategies/strategy.h"
#include "train/optimizer.h"

namespace hpcbench::strategies::shard {

// fsdp hybrid's shard groups: `group_size` consecutive ranks when given,
// else the ranks of each node (`hosts`, rank order; all ranks when empty).
// Throws UserError when the groups cannot have equal sizes.
std::vector<std::vector<int>> shard_groups(int group_size, const std::vector<std::string>& hosts, int world);

class Sharded final : public Strategy, public model::UnitHooks {
 public:
  // The run record's options text from the plan as set-up resolved it (the
  // shard group's size, the reduction dtype); the strategy's folder knows
  // which of its options they are.
  using Record = std::function<std::string(const ShardingPlan& resolved)>;
  Sharded(ShardingPlan plan, Record record);
  ~Sharded() override;
  Topology setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override;
  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& batch, double scale,
                              bool last_micro, train::StepTimer& timer) override;
  void finish_gradients(train::StepTimer& timer) override;

  // Sizes for the memory model.
  int64_t parameters() const;
  int64_t largest_unit() const;
  std::vector<int64_t> unit_sizes() const;  // elements per unit, forward order
  const ShardingPlan& plan() const { return plan_; }
  // The memory model's figure for this run (after setup).
  double theoretical_state_bytes() const;
  // Ranks one copy of the model is partitioned over (the world, or the shard
  // group of hybrid sharding).
  int shard_ranks() const;
  c10::ScalarType compute_dtype() const { return compute_dtype_; }

  // Called by the post-accumulate-grad hook of parameter `index`.
  void on_grad_ready(size_t index);
  // model::UnitHooks: gather a unit before its forward, free it after.
  void before(size_t unit) override;
  void after(size_t unit, const at::Tensor& output) override;

 private:
  friend class ShardedUpdater;
  struct Unit {
    std::string name;
    // Its collectives' names, made once (setup) rather than per collective.
    std::string gather_what, reduce_what, replicate_what;
    std::vector<size_t> flats;
    std::vector<size_t> params;  // indices into params_
    size_t pending = 0;          // gradients still to come this backward
    bool gathered = true;
    torch::nn::Module* module = nullptr;
    // An all-gather in flight (prefetch): its works and the inputs they read.
    std::vector<dist::Pending> inflight;
    std::vector<at::Tensor> inflight_inputs;
  };
  // A unit's gradient reduction in flight: the buffer sent (full gradients
  // in the reduce dtype) and, for reduce-scatter, this rank's part.
  struct Reduction {
    size_t flat = 0;
    const Unit* unit = nullptr;
    at::Tensor send, part;
    dist::Pending work;
  };
  // Every parameter gathered into the model (checkpoints, evaluation); the
  // next forward_backward reshards.
  void unshard_model();
  void complete_reductions();
  void gather(Unit& u);
  void start_gather(Unit& u);
  void finish_gather(Unit& u);
  void prefetch(size_t unit);
  at::Tensor gather_input(const FlatParam& f) const;
  void use_compute_views();
  void reshard(Unit& u);
  void reduce(Unit& u);
  void note_peak();
  size_t current_bytes(bool transient) const;

  ShardingPlan plan_;
  Record record_;
  StrategyContext ctx_;
  dist::Comm* shard_comm_ = nullptr;              // partitions are cut over its ranks
  std::unique_ptr<dist::Comm> shard_group_;       // hybrid: this node's ranks
  std::unique_ptr<dist::Comm> replicate_group_;   // hybrid: the ranks holding the same partition
  c10::ScalarType compute_dtype_ = c10::kFloat;
  c10::ScalarType reduce_dtype_ = c10::kFloat;
  bool mixed_ = false;          // compute dtype differs from the fp32 masters
  bool master_views_ = false;   // unshard_model() left fp32 parameters in the model
  bool new_step_ = true;
  std::vector<FlatParam> flats_;
  std::vector<Unit> units_;
  std::vector<at::Tensor> params_;
  std::vector<size_t> unit_of_;  // param -> unit
  std::vector<Reduction> reductions_;
  const torch::optim::Optimizer* optimizer_ = nullptr;  // the updater's, whose states the accounting counts
  size_t peak_transient_ = 0;
  bool resharded_ = false;  // unshard_model() left every unit gathered
};

}  // namespace hpcbench::strategies::shard
