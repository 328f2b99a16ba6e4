#pragma once
// fp32 master weights, once for every strategy. Where parameters are held
// in a low-precision compute dtype (bf16-resident weights, --fused under
// --precision bf16; the shard engine's gathered copies under mixed
// precision), the optimizer steps fp32 masters and the step ends by writing
// their values back into the compute copy. One form serves both: a flat
// buffer of parameters (MasterFlat) whose fp32 master is cut into
// partitions over the ranks that share it. The shard engine holds one per
// sharding unit and weight-decay group (shard/flat_param.h); a replicated
// model is the same flat over one rank (MasterWeights), so that forward and
// backward run without autocast and its per-step weight casts.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine_policy.h"
#include "model/bert.h"

namespace hpcbench::dist {
class Comm;
}
namespace hpcbench::train {
class FusedAdamW;
}
namespace torch::optim {
class Optimizer;
}
namespace hpcbench::kernels {
struct MasterAdamW;
}

namespace hpcbench::strategies {

// The dtype a strategy holds its parameters in, and so whether there are
// fp32 masters beside them (any dtype but fp32): the one place residency is
// decided from the engine (train/engine.h). A replicated model stays fp32
// (autocast casts per use) unless the engine makes its weights resident; a
// model whose parameters are gathered (`gathered`: the shard engine) is cast
// on every gather anyway, so under mixed precision it holds the compute
// dtype whatever the engine (FSDP2's param_dtype). The engine's precision:
// the run's (fp32, tf32, fp16, bf16).
c10::ScalarType weight_dtype(const EnginePolicy& engine, bool gathered);

// Parameters laid end to end, padded to a multiple of the ranks the flat is
// cut over, so that rank r's master partition is one contiguous slice and
// every collective moves one tensor. The module's parameters view `full`
// (set_data), so a write-back or a gather refreshes them in place.
struct MasterFlat {
  std::vector<at::Tensor> params;  // the module's parameters (autograd leaves)
  std::vector<int64_t> offsets;    // of each parameter in `full`
  int64_t numel = 0;               // without padding
  int64_t shard_numel = 0;         // padded numel / ranks
  // [shard_numel * ranks] in the compute dtype: memory of its own where the
  // parameters are replicated, else the owner's (a gather slot).
  at::Tensor full;
  // fp32 [shard_numel]: this rank's master partition, what the optimizer
  // steps; a slice of `full` when that is fp32 and replicated (the
  // parameters are their own masters), else memory of its own.
  at::Tensor shard;
  bool shard_is_view = true;

  // Appends `p` to the flat (before make_masters).
  void add(const at::Tensor& p);
  // Parameter k's shape over `flat` (`full`, or a whole fp32 master).
  at::Tensor view_of(const at::Tensor& flat, size_t k) const;
};

// The parameters' current values as fp32, rank 0's winning where `comm` is
// given (each rank drew its own; a collective over it), cut into this
// rank's master partition `part` of `parts`; where `replicated`, the full
// compute buffer made from them.
void make_masters(MasterFlat& f, dist::Comm* comm, int parts, int part, c10::ScalarType compute, bool replicated);

// This rank's chunk of `full` with its master partition's values in it
// (cast to the compute dtype; nothing when it is a view of them): on one
// rank the whole write-back, on several an all-gather's input.
at::Tensor write_back(const MasterFlat& f, int part);

// The module's parameters become views of `full` (the compute copy) or of
// `whole`, an fp32 master whole (what a checkpoint or an evaluation reads).
void view_compute(MasterFlat& f);
void view_whole(MasterFlat& f, const at::Tensor& whole);

// A replicated model's masters: one flat over one rank, its master split
// into per-parameter tensors (the optimizer's, in the model's parameter
// order). Stepped one of two ways:
// - op by op: fp32 copies of the gradients (gradients_in), clipping and
//   AdamW on them, the masters copied out;
// - fused (the engine's fused master step, EnginePolicy::fused_master_step): the step of
//   kernels/master_adamw.h over the flat itself, reading the compute-dtype
//   gradients where autograd left them and writing the compute copy, with
//   m and v as flats of this class (no fp32 gradients at all). The same
//   arithmetic: the op-by-op path's fp32 gradient copies are exact.
class MasterWeights {
 public:
  // The model's current (fp32) values become the masters; its parameters
  // are then views of the flat's compute copy in `engine`'s precision,
  // stepped as `engine` says. Any module: a pipeline stage or a
  // tensor-parallel shard holds its own parameters.
  MasterWeights(torch::nn::Module& model, const EnginePolicy& engine);
  // Rank 0's masters win (each rank drew its own initial weights); the
  // compute copy follows.
  void broadcast(dist::Comm& comm);
  // The fp32 tensors the optimizer steps, in the model's parameter order.
  const std::vector<at::Tensor>& masters() const { return masters_; }
  // The masters' gradients from the parameters' (fp32, in memory of their
  // own; a parameter without a gradient gives zeros).
  void gradients_in();
  // The masters' values into the compute copy, after a step.
  void copy_out();
  // The model's parameters the masters themselves (a checkpoint or an
  // evaluation reads the fp32 weights), until use_compute().
  void use_masters();
  // The model's parameters the compute copy again (before a forward);
  // nothing when they are.
  void use_compute();
  // The memory held besides the model's parameters and the optimizer's
  // states: the masters and their gradients; fused, the masters, m and v
  // (the optimizer then holds no states).
  std::vector<at::Tensor> held() const;

  // What every updater over masters does the same way (the replicas', a
  // tensor shard's, a pipeline stage's; they differ only in where their
  // norm's sum of squares is all-reduced):
  // - step: fused, step_fused with `optimizer` (adamw_of_masters's, a
  //   FusedAdamW: its groups and rates, never its own step); op by op, the
  //   masters' fp32 gradients (unless clip_gradients copied them since the
  //   last step), the optimizer's step, the copy out;
  // - zero_grad: the optimizer's gradients (the masters') and the
  //   parameters' own released, as Hugging Face's Trainer sets them to none;
  // - clip_gradients (op by op): the masters with their fp32 gradients
  //   copied in now, in the model's parameter order, for a clip to read
  //   and scale before step() steps them.
  void step(torch::optim::Optimizer& optimizer);
  void zero_grad(torch::optim::Optimizer& optimizer);
  const std::vector<at::Tensor>& clip_gradients();

  bool fused() const { return fused_; }
  // Fused: the gradients' norm (a device tensor, read after the step's
  // synchronisation) and the clip coefficient the next step_fused takes.
  at::Tensor clip_fused(double max_norm);
  // Fused: the step count advanced on the device, then the update of every
  // parameter with `optimizer`'s groups (rates, decay, betas, eps; a rate
  // tensor where it keeps one) and the compute copy written.
  void step_fused(const train::FusedAdamW& optimizer);
  // Fused, for a norm over a group's ranks (a tensor shard's, a pipeline's
  // stages): the sum of the squares of the gradients the `keep` mask marks
  // (every one where empty), a one-element fp32 tensor on the device to be
  // all-reduced; then the clip coefficient the next step_fused takes from
  // the whole norm `total`, min(1, max_norm / (total + 1e-6)) as
  // kernels::grad_norm forms it, on the device (nothing read by the host).
  at::Tensor grad_squares_fused(const std::vector<bool>& keep = {});
  at::Tensor clip_fused_to(const at::Tensor& total, double max_norm);

 private:
  kernels::MasterAdamW fused_args(const train::FusedAdamW* optimizer) const;

  MasterFlat flat_;
  std::vector<at::Tensor> masters_;  // views of flat_.shard
  std::vector<at::Tensor> grads_;    // views of flat_grad_
  at::Tensor flat_grad_;             // fp32, every parameter end to end (op by op)
  bool on_masters_ = false;
  bool have_grads_ = false;  // op by op: clip_gradients copied them since the last step
  // Fused: AdamW's moments as flats, the step count, the norm, the clip
  // coefficient and the norm's partial sums, made once (nothing is
  // allocated per step, so that a CUDA graph can hold the step), and each
  // master's optimizer group.
  bool fused_ = false;
  at::Tensor exp_avg_, exp_avg_sq_, step_, norm_, coef_, scratch_;
  mutable std::vector<int> groups_;
  bool clipped_ = false;  // clip_fused ran since the last step
};

// The masters the run's engine asks for (weights resident in the compute
// dtype), over `model`'s parameters; null otherwise (the model stays fp32,
// under autocast where mixed). Forward then runs under engine.autocast().
// The one place a replicated, pipelined or tensor-parallel model's
// residency is decided (the shard engine's flats: weight_dtype above).
std::shared_ptr<MasterWeights> resident_weights(torch::nn::Module& model, const EnginePolicy& engine);

}  // namespace hpcbench::strategies
