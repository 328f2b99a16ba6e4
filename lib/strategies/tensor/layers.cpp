#include "strategies/tensor/layers.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "distributed/process_group.h"
#include "model/activation_checkpoint.h"

namespace hpcbench::strategies::tensor {

// Built of the model's own modules and functions (lib/model).
using namespace hpcbench::model;

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

dist::Comm* comm_of(AutogradContext* ctx) {
  return reinterpret_cast<dist::Comm*>(ctx->saved_data["group"].toInt());
}

// The sum over the group, in a buffer of its own: the caller's tensor (an
// activation autograd keeps, or a gradient it hands elsewhere) is left as is.
at::Tensor all_reduced(const at::Tensor& t, dist::Comm* group, const char* what) {
  auto sum = t.contiguous().clone();
  group->allreduce(sum, /*average=*/false, what);
  return sum;
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_reduced(grads[0], comm_of(ctx), "tensor-parallel all_reduce (backward)"), at::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, int64_t group) {
    return all_reduced(x, reinterpret_cast<dist::Comm*>(group), "tensor-parallel all_reduce (forward)");
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor()}; }
};

std::string shape(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

bool splits(dist::Comm* group) { return group && group->size() > 1; }

int64_t handle(dist::Comm* group) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(group)); }

// This rank's part of a whole tensor split along `dim`: the packed QKV
// projection's rows are [query; key; value], so a rank takes its block of
// each third, in the order the packed forward views them ([3, heads, d]).
at::Tensor slice_of(const std::string& name, const at::Tensor& src, int dim, int64_t ranks, int64_t rank) {
  const int64_t thirds = packed_qkv(name) ? 3 : 1;
  if (src.dim() <= dim || src.size(dim) % (thirds * ranks) != 0)
    fail("tensor-parallel model: {} of shape {} does not split into {} along dimension {}", name, shape(src),
         thirds * ranks, dim);
  const int64_t part = src.size(dim) / (thirds * ranks);
  if (thirds == 1) return src.narrow(dim, rank * part, part);
  return src.unflatten(0, {3, src.size(0) / 3}).narrow(1, rank * part, part).flatten(0, 1);
}

// The whole tensor from the ranks' slices stacked as [ranks, slice...]: the
// inverse of slice_of.
at::Tensor whole_of(const std::string& name, const at::Tensor& parts, int dim) {
  if (dim == 1) return parts.permute({1, 0, 2}).reshape({parts.size(1), -1});
  if (!packed_qkv(name)) return parts.flatten(0, 1);
  // [ranks, 3 * part, ...] -> [3, ranks, part, ...] -> [3 * ranks * part, ...]
  return parts.unflatten(1, {3, parts.size(1) / 3}).transpose(0, 1).flatten(0, 2);
}

}  // namespace

at::Tensor copy_to_tensor_parallel(const at::Tensor& x, dist::Comm* group) {
  return splits(group) ? CopyToGroup::apply(x, handle(group)) : x;
}

at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, dist::Comm* group) {
  return splits(group) ? ReduceFromGroup::apply(x, handle(group)) : x;
}

void check_tensor_parallel(const BertConfig& c, int ranks) {
  if (ranks < 1) fail("--tp-size {}: must be at least 1", ranks);
  if (c.num_attention_heads % ranks != 0)
    fail("--tp-size {}: model {} has {} attention heads, which do not divide among {} tensor-parallel ranks (each "
         "rank computes whole heads; choose a --tp-size that divides {})",
         ranks, c.name, c.num_attention_heads, ranks, c.num_attention_heads);
  if (c.intermediate_size % ranks != 0)
    fail("--tp-size {}: model {} has an MLP of {} columns, which do not divide among {} tensor-parallel ranks", ranks,
         c.name, c.intermediate_size, ranks);
}

bool packed_qkv(const std::string& name) {
  return name.ends_with("attention.self.qkv.weight") || name.ends_with("attention.self.qkv.bias");
}

int tensor_parallel_dim(const std::string& name) {
  auto ends = [&](const char* s) { return name.ends_with(s); };
  if (packed_qkv(name) || ends("attention.self.query.weight") || ends("attention.self.query.bias") || ends("attention.self.key.weight") ||
      ends("attention.self.key.bias") || ends("attention.self.value.weight") || ends("attention.self.value.bias") ||
      ends("intermediate.dense.weight") || ends("intermediate.dense.bias"))
    return 0;
  // attention.output.dense.weight and output.dense.weight: both row-parallel.
  if (ends("output.dense.weight")) return 1;
  return -1;
}

RowParallelResidualOutputImpl::RowParallelResidualOutputImpl(int64_t in_per_rank, const BertConfig& c,
                                                             dist::Comm* group, EnginePolicy::Kernels kernels)
    : group_(group), kernels_(kernels) {
  dense = register_module("dense", torch::nn::Linear(in_per_rank, c.hidden_size));
  LayerNorm = register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size})
                                                                     .eps(c.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor RowParallelResidualOutputImpl::forward(const at::Tensor& x, const at::Tensor& residual) {
  // The bias is added once, after the partial products are summed.
  auto product = reduce_from_tensor_parallel(at::linear(x, dense->weight), group_);
  return bias_dropout_residual_layernorm(*this, product, dense, dropout, LayerNorm, residual, kernels_);
}

TensorParallelAttentionImpl::TensorParallelAttentionImpl(const BertConfig& c, dist::Comm* group, int ranks,
                                                         const EnginePolicy& engine)
    : group_(group) {
  self = register_module("self", BertSelfAttention(c, ranks, engine.qkv));
  output = register_module("output", RowParallelResidualOutput(c.hidden_size / ranks, c, group, engine.kernels));
}

at::Tensor TensorParallelAttentionImpl::forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive) {
  // f on the projections' input only: the residual's gradient is already
  // the same on every rank and must not be summed.
  return output(self->forward(copy_to_tensor_parallel(x, group_), key_mask, additive), x);
}

TensorParallelBertLayerImpl::TensorParallelBertLayerImpl(const BertConfig& c, dist::Comm* group, int ranks,
                                                         const EnginePolicy& engine)
    : group_(group) {
  attention = register_module("attention", TensorParallelAttention(c, group, ranks, engine));
  intermediate = register_module("intermediate", BertIntermediate(c, ranks, engine.kernels));
  output = register_module("output", RowParallelResidualOutput(c.intermediate_size / ranks, c, group, engine.kernels));
}

at::Tensor TensorParallelBertLayerImpl::forward(const at::Tensor& x, const at::Tensor& key_mask, at::Tensor& additive) {
  auto a = attention(x, key_mask, additive);
  return output(intermediate(copy_to_tensor_parallel(a, group_)), a);
}

TensorParallelBertForQuestionAnsweringImpl::TensorParallelBertForQuestionAnsweringImpl(
    const BertConfig& config, std::shared_ptr<dist::Comm> group, const EnginePolicy& engine)
    : config_(config), engine_(engine), group_(std::move(group)) {
  ranks_ = group_ ? group_->size() : 1;
  rank_ = group_ ? group_->rank() : 0;
  check_tensor_parallel(config_, ranks_);
  // The whole model's draws, so that a seed means the same weights as for
  // every other strategy; its slices are kept and the rest freed.
  BertForQuestionAnswering whole(config_, engine_);
  auto bert = register_module("bert", std::make_shared<torch::nn::Module>("BertModel"));
  embeddings = bert->register_module("embeddings", BertEmbeddings(config_, engine_.embedding_kernels()));
  auto encoder = bert->register_module("encoder", std::make_shared<torch::nn::Module>("BertEncoder"));
  layer = encoder->register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i)
    layer->push_back(TensorParallelBertLayer(config_, group_.get(), ranks_, engine_));
  qa_outputs = register_module("qa_outputs", torch::nn::Linear(config_.hidden_size, 2));
  load_tensor_parallel(*this, named_tensors(*whole));
}

QAOutput TensorParallelBertForQuestionAnsweringImpl::forward(const at::Tensor& input_ids,
                                                             const at::Tensor& token_type_ids,
                                                             const at::Tensor& attention_mask,
                                                             const std::optional<at::Tensor>& start_positions,
                                                             const std::optional<at::Tensor>& end_positions) {
  if (input_ids.size(1) > config_.max_position_embeddings)
    fail("sequence length {} exceeds the model's {} positions", input_ids.size(1), config_.max_position_embeddings);
  auto h = embeddings(input_ids, token_type_ids);
  auto key_mask = key_mask_of(attention_mask);
  at::Tensor additive;
  for (size_t i = 0; i < layer->size(); ++i)
    h = run_layer(layer[i]->as<TensorParallelBertLayer>(), h, key_mask, additive, recompute_);
  return qa_output(qa_logits(qa_outputs, h, engine_), start_positions, end_positions);
}

std::map<std::string, at::Tensor> named_tensors(const torch::nn::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : module.named_parameters()) out[p.key()] = p.value();
  return out;
}

void load_tensor_parallel(TensorParallelBertForQuestionAnsweringImpl& model,
                          const std::map<std::string, at::Tensor>& whole) {
  torch::NoGradGuard no_grad;
  const int64_t ranks = model.ranks(), rank = model.rank();
  for (auto& p : model.named_parameters()) {
    auto it = whole.find(p.key());
    if (it == whole.end()) fail("tensor-parallel model: the whole model has no tensor {}", p.key());
    const int dim = tensor_parallel_dim(p.key());
    at::Tensor src = it->second;
    if (dim >= 0) src = slice_of(p.key(), src, dim, ranks, rank);
    if (!src.sizes().equals(p.value().sizes()))
      fail("tensor-parallel model: {} is {} in the whole model, its slice {} but this rank holds {}", p.key(),
           shape(it->second), shape(src),
           shape(p.value()));
    p.value().copy_(src);
  }
}

std::map<std::string, at::Tensor> full_state(TensorParallelBertForQuestionAnsweringImpl& model, bool gradients) {
  torch::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> out;
  const int64_t ranks = model.ranks();
  // named_parameters() runs in the same order on every rank: the gathers pair up.
  for (auto& p : model.named_parameters()) {
    const int dim = tensor_parallel_dim(p.key());
    auto local = gradients ? p.value().grad() : p.value().detach();
    if (!local.defined()) fail("tensor-parallel model: {} has no gradient to gather", p.key());
    local = local.contiguous();
    if (dim < 0 || ranks == 1) {
      out[p.key()] = local.clone();
      continue;
    }
    auto all = at::empty({ranks * local.numel()}, local.options());
    model.group()->allgather(all, local.view({-1}), "tensor-parallel gather");
    std::vector<int64_t> shape{ranks};
    shape.insert(shape.end(), local.sizes().begin(), local.sizes().end());
    auto parts = all.view(shape);  // [ranks, slice...]
    out[p.key()] = whole_of(p.key(), parts, dim);
  }
  return out;
}

}  // namespace hpcbench::strategies::tensor
