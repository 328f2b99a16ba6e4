#pragma once
// Activation checkpointing (recomputation): a function of one tensor whose
// intermediate activations are not kept for backward; backward runs it again
// from its saved input, as torch.utils.checkpoint does (its reentrant form),
// with the random state and the autocast state of the first run, so that
// dropout draws the same masks and mixed precision the same casts.
#include <ATen/core/Tensor.h>

#include <functional>

namespace hpcbench::model {

using TensorFunction = std::function<at::Tensor(const at::Tensor&)>;

// fn(x), holding only x for backward. `fn` must not keep references to
// anything that dies before backward (capture tensors by value). Without
// grad mode (evaluation) it is fn(x).
at::Tensor checkpointed(const TensorFunction& fn, const at::Tensor& x);

// One encoder layer (BertLayerImpl, or the tensor-parallel one), recomputed in
// backward when `recompute`. The recompute builds its own additive mask: the
// caller's cache may be rebuilt or freed by then.
template <typename Layer>
at::Tensor run_layer(Layer* layer, const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive,
                     bool recompute) {
  if (!recompute) return layer->forward(x, key_mask, additive);
  return checkpointed(
      [layer, key_mask](const at::Tensor& h) {
        at::Tensor own;
        return layer->forward(h, key_mask, own);
      },
      x);
}

}  // namespace hpcbench::model
