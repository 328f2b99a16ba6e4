// Megatron-LM's tensor parallelism (Shoeybi et al. 2019) as a strategy: the
// ranks form dp x tp (specs/mesh.h, tensor groups of consecutive ranks
// inside a node); each rank trains its slice of the model
// (strategies/tensor/layers.h), every rank of a group reads the same batch, and
// across groups the shards' gradients are averaged by one plain all-reduce
// after backward (ddp's buckets hook the whole model's parameters, which the
// shard is not).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fmt/format.h>

#include <mutex>

#include "core/error.h"
#include "distributed/process_group.h"
#include "model/bert_modules.h"
#include "strategies/master_weights.h"
#include "strategies/strategy.h"
#include "strategies/support.h"
#include "strategies/tensor/layers.h"
#include "strategies/tensor/options.h"
#include "train/setup.h"

namespace hpcbench::strategies::tensor {

namespace {


// The shard's optimizer, the global gradient norm over the group's slices,
// and the whole model gathered back into the trainer's (whose own weights
// are released while the shard trains). With `masters` (bf16-resident
// weights) the shard's fp32 masters step as the replicated strategies' do
// (master_weights.h, the fused master-weight AdamW); only the norm's
// all-reduce over the group is the shard's.
class ShardUpdater final : public Updater {
 public:
  ShardUpdater(TensorParallelBertForQuestionAnswering shard, model::BertForQuestionAnswering whole,
               const train::OptimizerConfig& cfg, dist::Comm* job, std::shared_ptr<MasterWeights> masters)
      : shard_(std::move(shard)),
        whole_(std::move(whole)),
        params_(shard_->parameters()),
        optimizer_(masters ? adamw_of_masters(*shard_, *masters, cfg) : train::make_adamw(*shard_, cfg)),
        job_(job),
        masters_(std::move(masters)) {
    for (const auto& p : shard_->named_parameters())
      if (p.value().requires_grad()) split_.push_back(tensor_parallel_dim(p.key()) >= 0);
  }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  std::vector<at::Tensor> params() const override { return params_; }

  // clip_grad_norm_ over the whole model: the split tensors' squares summed
  // over the group, the replicated ones (equal on every rank) counted once.
  at::Tensor clip(double max_norm) override {
    auto* group = shard_->group();
    const bool grouped = group && group->size() > 1;
    if (masters_ && masters_->fused()) {
      // The fused master step's norm over the shard's bf16 gradients, the
      // split part's square all-reduced on the device before the
      // coefficient is formed.
      if (!grouped) return masters_->clip_fused(max_norm);
      auto keep = split_;
      auto split_sq = masters_->grad_squares_fused(keep);
      group->allreduce(split_sq, /*average=*/false, "tensor-parallel all_reduce (gradient norm)");
      keep.flip();
      return masters_->clip_fused_to((split_sq + masters_->grad_squares_fused(keep)).sqrt(), max_norm);
    }
    std::vector<at::Tensor> split, replicated;
    const auto* masters = masters_ ? &masters_->clip_gradients() : nullptr;  // the parameters' order
    size_t k = 0;
    for (const auto& p : params_) {
      if (!p.requires_grad()) continue;
      const auto& g = masters ? masters->at(k).grad() : p.grad();
      if (g.defined()) (split_[k] ? split : replicated).push_back(g);
      ++k;
    }
    at::NoGradGuard no_grad;
    auto squares = [&](const std::vector<at::Tensor>& g) {
      if (g.empty()) return at::zeros({1}, params_.front().options().dtype(at::kFloat).requires_grad(false));
      return at::stack(at::_foreach_norm(g, 2)).pow(2).sum().reshape({1});
    };
    auto split_sq = squares(split);
    if (grouped) group->allreduce(split_sq, /*average=*/false, "tensor-parallel all_reduce (gradient norm)");
    auto total = (split_sq + squares(replicated)).sqrt().reshape({});
    auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
    split.insert(split.end(), replicated.begin(), replicated.end());
    at::_foreach_mul_(split, coef);
    return total;
  }

  // Ranks holding different slices skip or take the step together.
  bool all_finite(bool local_finite) override {
    if (!job_ || job_->size() == 1) return local_finite;
    auto bad = at::full({1}, local_finite ? 0.0f : 1.0f, params_.front().options().requires_grad(false));
    job_->allreduce(bad, /*average=*/false, "fp16 overflow verdict");
    return bad.item<float>() == 0.0f;
  }
  void step() override {
    if (masters_) masters_->step(*optimizer_);
    else optimizer_->step();
  }
  void zero_grad() override {
    if (masters_) masters_->zero_grad(*optimizer_);
    else optimizer_->zero_grad(/*set_to_none=*/true);
  }

  // With masters the fp32 weights are gathered (the shard computes on
  // their bf16 copies again from the next forward on).
  void gather_whole() override {
    if (masters_) masters_->use_masters();
    auto full = full_state(*shard_);  // collective over the group
    at::NoGradGuard no_grad;
    for (auto& p : whole_->named_parameters()) p.value().set_data(full.at(p.key()));
  }

  size_t state_bytes() const override {
    // The whole model's weights count too once gathered (not while training).
    std::vector<at::Tensor> held;
    for (auto& p : whole_->parameters())
      if (p.numel() > 0) held.push_back(p);
    if (masters_)
      for (auto& t : masters_->held()) held.push_back(t);
    return train::model_state_bytes(params_, *optimizer_, held);
  }

 private:
  TensorParallelBertForQuestionAnswering shard_;
  model::BertForQuestionAnswering whole_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  dist::Comm* job_;
  std::shared_ptr<MasterWeights> masters_;
  // Per trained parameter, in order: whether the group splits it (its
  // squares summed over the group) or every rank holds it whole.
  std::vector<bool> split_;
};

// Ranks on each node (0: every rank on one), and a clear error when a
// tensor-parallel group would span nodes even though the counts divide.
int ranks_per_node(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return 0;
  int n = 0;
  for (auto& h : hosts) n += h == hosts.front() ? 1 : 0;
  return n;
}

void check_group_on_one_node(const Mesh& mesh, int rank, const std::vector<std::string>& hosts) {
  if (hosts.empty()) return;
  for (int r : mesh.tp_group(rank))
    if (hosts[size_t(r)] != hosts[size_t(rank)])
      fail("--tp-size {}: ranks {} and {} of one tensor-parallel group are on nodes {} and {}; a group must stay "
           "inside one node (give every node a multiple of --tp-size ranks)",
           mesh.tp(), rank, r, hosts[size_t(rank)], hosts[size_t(r)]);
}

// Rank 0's whole model on every rank, before it is cut: slices of unequal
// models would not make one model.
void broadcast_whole(model::BertForQuestionAnswering& m, dist::Comm& comm) {
  if (comm.size() == 1) return;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  for (auto& p : m->parameters()) flat.push_back(p.reshape({-1}));
  auto all = at::cat(flat);
  comm.broadcast(all, 0);
  int64_t off = 0;
  for (auto& p : m->parameters()) {
    p.copy_(all.narrow(0, off, p.numel()).view(p.sizes()));
    off += p.numel();
  }
}

// The shard, its weights cut from `whole` and its layers in whole's QKV
// layout and kernels. Building it draws a whole model's weights (then
// discarded): the CPU generator is put back so that dropout draws what it
// draws under every other strategy.
TensorParallelBertForQuestionAnswering make_shard(model::BertForQuestionAnswering& whole,
                                                  std::shared_ptr<dist::Comm> group, c10::Device device) {
  auto gen = at::detail::getDefaultCPUGenerator();
  at::Tensor rng;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng = gen.get_state();
  }
  TensorParallelBertForQuestionAnswering shard(whole->config(), std::move(group), whole->engine());
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  }
  shard->to(device);
  load_tensor_parallel(*shard, named_tensors(*whole));
  shard->set_activation_checkpointing(whole->bert()->activation_checkpointing());
  shard->train();
  return shard;
}

class TensorParallel final : public Strategy {
 public:
  explicit TensorParallel(const Choice& choice) : choice_(choice) {}

  SetUp setup(model::BertForQuestionAnswering& whole, const StrategyContext& ctx) override {
    ctx_ = ctx;
    if (!ctx.comm) fail("--strategy tensor needs the job's communicator (internal: none was created)");
    auto& comm = *ctx.comm;
    const int per_node = ranks_per_node(ctx.hosts);
    const auto mesh = tensor_mesh(choice_.as<TensorOptions>(), ctx.world_size, per_node);
    check_group_on_one_node(mesh, ctx.rank, ctx.hosts);
    check_tensor_parallel(whole->config(), mesh.tp());
    check_same_model(comm, "tensor", fmt::format("{} parameters", whole->config().num_parameters()));
    broadcast_whole(whole, comm);

    // Every rank creates its tensor group, then its data-parallel group:
    // the same order everywhere, so no rendezvous waits on another.
    const auto me = mesh.coord_of(ctx.rank);
    std::shared_ptr<dist::Comm> tp_group;
    if (mesh.tp() == ctx.world_size) tp_group = ctx.comm;
    else if (mesh.tp() > 1) tp_group = comm.subgroup(fmt::format("tensor.{}", me.dp), mesh.tp_group(ctx.rank));
    if (mesh.dp() > 1) dp_group_ = comm.subgroup(fmt::format("data.{}", me.tp), mesh.dp_group(ctx.rank));

    shard_ = make_shard(whole, tp_group, ctx.device);
    // After the cut from rank 0's fp32 weights: the masters are those slices.
    masters_ = resident_weights(*shard_, ctx.engine);
    // The shard is what trains: the whole model's weights are released
    // until gather_whole brings them back for checkpoints and evaluation.
    {
      at::NoGradGuard no_grad;
      for (auto& p : whole->parameters()) p.set_data(at::empty({0}, p.options()));
    }

    Topology t;
    t.replicas = mesh.dp();
    t.data_ranks = mesh.dp();
    t.data_rank = me.dp;
    t.computes_loss = me.tp == 0;  // the group's ranks compute one and the same loss
    Choice resolved = choice_;
    resolved.set("tp-size", std::to_string(mesh.tp()), "--tp-size");
    resolved.set("dp-size", std::to_string(mesh.dp()), "--dp-size");
    t.options = fmt::format("{},layout={}", resolved.options_text(), mesh.label());
    MemoryInputs in;
    in.units = whole->config().unit_parameters();
    in.resident = masters_ != nullptr;
    in.compute_bytes = ctx.engine.precision == "bf16" || ctx.engine.precision == "fp16" ? 2 : 4;
    in.shape = per_node > 0 ? Shape{ctx.world_size / per_node, per_node} : Shape{1, ctx.world_size};
    t.state_theory_bytes = choice_.memory(in).total();
    std::unique_ptr<Updater> updater = std::make_unique<ShardUpdater>(shard_, whole, ctx.optimizer, ctx.comm.get(), masters_);
    return {std::move(t), std::move(updater)};
  }

  at::Tensor forward_backward(model::BertForQuestionAnswering&, const train::Batch& b, double scale, bool,
                              train::StepTimer& timer) override {
    if (masters_) masters_->use_compute();
    return forward_backward_of(shard_, b, scale, ctx_.device.type(), ctx_.engine, timer);
  }

  void finish_gradients(train::StepTimer& timer) override {
    if (dp_group_)
      allreduce_gradients(shard_->parameters(), *dp_group_,
                          "tensor data-parallel all_reduce of the shard's gradients");
    timer.mark(train::Phase::GradSync);
  }

 private:
  Choice choice_;
  StrategyContext ctx_;
  TensorParallelBertForQuestionAnswering shard_{nullptr};
  std::shared_ptr<MasterWeights> masters_;  // --fused under bf16
  std::unique_ptr<dist::Comm> dp_group_;
};

}  // namespace

std::unique_ptr<Strategy> make(const Choice& c) { return std::make_unique<TensorParallel>(c); }

}  // namespace hpcbench::strategies::tensor
