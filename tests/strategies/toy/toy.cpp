#include "toy/toy.h"

#include <ATen/ATen.h>

#include "distributed/process_group.h"
#include "strategies/support.h"

namespace hpcbench::strategies::toy {

namespace {

class Toy final : public Strategy {
 public:
  explicit Toy(const Choice& choice) : choice_(choice) {}

  SetUp setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) override {
    ctx_ = ctx;
    params_ = model->parameters();
    int64_t n = 0;
    for (auto& p : params_) n += p.numel();
    if (ctx.comm && ctx.world_size > 1) {
      at::NoGradGuard no_grad;
      for (auto& p : params_) ctx.comm->broadcast(p, 0);  // rank 0's initial weights
    }
    auto t = replica_topology(ctx);
    t.options = choice_.options_text();
    t.state_theory_bytes = replicated_state_bytes(n);
    std::unique_ptr<Updater> updater = std::make_unique<ReplicatedUpdater>(model, ctx.optimizer);
    return {std::move(t), std::move(updater)};
  }

  at::Tensor forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale, bool,
                              train::StepTimer& timer) override {
    return forward_backward_step(model, b, scale, ctx_.device.type(), ctx_.engine, timer);
  }

  // The mean over ranks of every gradient, in `chunks` all-reduces of one
  // flat buffer.
  void finish_gradients(train::StepTimer& timer) override {
    if (ctx_.comm && ctx_.world_size > 1) {
      at::NoGradGuard no_grad;
      std::vector<at::Tensor> grads;
      for (auto& p : params_) grads.push_back(p.grad().reshape({-1}));
      auto flat = at::cat(grads).div_(ctx_.world_size);
      for (auto& piece : flat.tensor_split(choice_.as<ToyOptions>().chunks)) ctx_.comm->allreduce(piece);
      int64_t at = 0;
      for (auto& p : params_) {
        p.mutable_grad().copy_(flat.narrow(0, at, p.numel()).view(p.sizes()));
        at += p.numel();
      }
    }
    timer.mark(train::Phase::GradSync);
  }

 private:
  Choice choice_;
  StrategyContext ctx_;
  std::vector<at::Tensor> params_;
};

}  // namespace

std::unique_ptr<Strategy> make(const Choice& choice) { return std::make_unique<Toy>(choice); }

}  // namespace hpcbench::strategies::toy
