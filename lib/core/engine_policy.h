#pragma once
// The engine a run trains on, as one value: chosen once from the run's
// settings, its device and what its strategy declares (train/engine.h), then
// handed to the model, the strategy and the loop, which read it instead of a
// flag each. Torch-free and at the bottom, so that the model (below the
// strategies' specs) and the strategies read the same value.
#include <string>
#include <vector>

namespace hpcbench {

struct EnginePolicy {
  // Bias + GELU and bias + dropout + residual + LayerNorm as one kernel each
  // (lib/kernels), or as ATen's separate operations.
  enum class Kernels { Aten, Fused };
  // Query, key and value as three projections (Hugging Face's layout) or one
  // packed [3h, h] projection.
  enum class Qkv { Split, Packed };
  // Parameters in fp32 (autocast casts them per use under mixed precision),
  // or resident in the compute dtype with fp32 masters the optimizer steps.
  enum class Weights { Fp32, Resident };
  // A residual join's gradient under the fused model: the branch's first
  // GEMM (the packed QKV, the FFN's first dense) accumulating its input
  // gradient into the residual's with beta = 1 (model/residual_fold.h), or
  // autograd adding the two in a kernel of its own (--no-residual-fold).
  enum class Residual { Added, Folded };
  // The optimizer step run op by op, or captured once as a CUDA graph and
  // replayed (on a CPU: the same graph-ready step, not captured).
  enum class Step { Eager, Graph };

  // fp32, tf32, fp16 or bf16. An FP8 recipe is another value here and a
  // GEMM choice beside `kernels`, decided in the same place.
  std::string precision = "fp32";
  Kernels kernels = Kernels::Aten;
  Qkv qkv = Qkv::Split;
  Weights weights = Weights::Fp32;
  Step step = Step::Eager;
  Residual residual = Residual::Folded;
  // Two more levers of the fused kernels, each on by default and turned off
  // on its own so that a GPU run can time it A/B (tools/gpu/validate.sh
  // profile): the embeddings' lookups, adds and LayerNorm as one kernel
  // (--no-fused-embedding), and the master weights' clip and AdamW as one
  // kernel over the flat (--no-fused-adamw; the op-by-op master step then).
  bool embedding_kernel = true;
  bool adamw_kernel = true;
  // How the engine was chosen (run.json's engine_reason): the flags that
  // asked for it, or why --engine auto resolved as it did.
  std::string reason;

  bool fused_kernels() const { return kernels == Kernels::Fused; }
  bool packed_qkv() const { return qkv == Qkv::Packed; }
  bool resident() const { return weights == Weights::Resident; }
  bool graph() const { return step == Step::Graph; }
  // Whether the model folds its residual gradients: the fused model's
  // layers only (the unfused one stays Hugging Face's operations).
  bool folds_residual() const { return fused_model() && residual == Residual::Folded; }
  // The fused model as --fused names it: packed QKV and the fused kernels.
  bool fused_model() const { return fused_kernels() && packed_qkv(); }
  // The kernels the embeddings and the master step run.
  Kernels embedding_kernels() const { return fused_kernels() && embedding_kernel ? Kernels::Fused : Kernels::Aten; }
  bool fused_master_step() const { return fused_kernels() && adamw_kernel; }
  // The precision forward runs its autocast under: none (fp32) where the
  // weights are resident in the compute dtype.
  std::string autocast() const { return resident() ? "fp32" : precision; }
  // "graph+fused", "fused", "graph", "eager": the record's one word for it.
  std::string name() const;
  // The command-line flags that ask for this engine (train/config.cpp), the
  // inverse of train::choose_engine under --engine eager: what a plan's
  // verification run passes to get the engine the plan was costed for.
  std::vector<std::string> flags() const;

  // The weights the fused model keeps under `precision`: resident in bf16
  // (forward without autocast's per-step casts), fp32 otherwise, where the
  // weights are their own masters. The one rule that the engine's choice
  // and a reading of its record (predict) share.
  static Weights fused_weights(const std::string& precision);
  // The engine a run record names: its precision, `fused` (1 with the fused
  // model) and `name` (name() above, "" in records older than the field).
  static EnginePolicy recorded(const std::string& precision, bool fused, const std::string& name);
};

}  // namespace hpcbench
