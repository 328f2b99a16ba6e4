#include "strategies/dp/dp.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "device/device.h"
#include "model/bert_modules.h"
#include "train/amp.h"

namespace hpcbench::strategies {

namespace {

// Runs f(i) for every i, i > 0 on its own thread, i == 0 on this one, as
// DataParallel's parallel_apply does; the first exception wins.
template <typename F>
void parallel_apply(size_t n, F&& f) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    f(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

SetUp Dp::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  place(model, ctx);
  std::string devs;
  // Appended piece by piece: GCC 12 reports false -Wstringop-overflow and
  // -Wrestrict warnings (in libstdc++'s char_traits.h) for a string literal
  // chosen at run time plus a temporary std::string, e.g. (c ? "" : "+") + s().
  for (auto& d : devices_) {
    if (!devs.empty()) devs += '+';
    devs += d.str();
  }
  // The replicas as resolved (0: every device), and the devices they ran on.
  auto resolved = choice_;
  resolved.set("replicas", std::to_string(devices_.size()), "dp");
  // One process: its devices are the job's replicas, and it reads all the data.
  Topology t;
  t.devices = static_cast<int>(devices_.size());
  t.replicas = t.devices;
  t.options = fmt::format("{},devices={}", resolved.options_text(), devs);
  int64_t n = 0;
  for (auto& p : params_) n += p.numel();
  t.state_theory_bytes = replicated_state_bytes(n);
  std::unique_ptr<Updater> updater = std::make_unique<ReplicatedUpdater>(model, ctx.optimizer);
  return {std::move(t), std::move(updater)};
}

void Dp::place(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  int n = static_cast<int>(choice_.as<dp::DpOptions>().replicas);
  devices_.clear();
  if (ctx.device.is_cpu()) {
    if (n == 0) n = 2;
    devices_.assign(static_cast<size_t>(n), ctx.device);
  } else {
    int visible = accelerator_count();
    if (n == 0) n = visible;
    if (n > visible)
      fail("--dp-replicas {}: only {} {} device(s) visible", n, visible, c10::DeviceTypeName(ctx.device.type()));
    devices_.push_back(ctx.device);
    for (int i = 0; static_cast<int>(devices_.size()) < n; ++i)
      if (i != ctx.device.index()) devices_.emplace_back(ctx.device.type(), static_cast<c10::DeviceIndex>(i));
  }
  params_ = model->parameters();
  replicas_.clear();
  replica_params_.clear();
  // Building a replica draws a random initialisation from the global
  // generator; restoring its state keeps dropout's stream that of a run
  // without replicas.
  auto gen = at::detail::getDefaultCPUGenerator();
  auto state = gen.get_state();
  for (size_t i = 1; i < devices_.size(); ++i) {
    model::BertForQuestionAnswering r(model->config());
    r->to(devices_[i]);
    r->train(model->is_training());
    // Each replica recomputes as the model does (--activation-checkpointing).
    r->bert()->set_activation_checkpointing(model->bert()->activation_checkpointing());
    replica_params_.push_back(r->parameters());
    replicas_.push_back(std::move(r));
  }
  gen.set_state(state);
}

at::Tensor Dp::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                bool, train::StepTimer& timer) {
  const int64_t rows = b.size();
  const auto n_dev = static_cast<int64_t>(devices_.size());
  // torch.chunk's split: equal chunks of ceil(rows / n), the last one shorter;
  // with fewer rows than devices some devices sit this micro-step out.
  const int64_t chunk = (rows + n_dev - 1) / n_dev;
  const auto used = static_cast<size_t>((rows + chunk - 1) / chunk);

  // replicate: the parameters as they are now, every call, as DataParallel
  // does. The copies and the reduction below are dp's communication; nothing
  // overlaps them, so the step timer counts them as exposed.
  timer.comm_begin();
  {
    at::NoGradGuard no_grad;
    for (size_t i = 1; i < used; ++i)
      for (size_t k = 0; k < params_.size(); ++k) replica_params_[i - 1][k].copy_(params_[k], /*non_blocking=*/true);
  }
  timer.comm_end();

  auto module = [&](size_t i) -> model::BertForQuestionAnsweringImpl& {
    return i == 0 ? *model : *replicas_[i - 1];
  };
  std::vector<model::QAOutput> outs(used);
  std::vector<double> weight(used);
  parallel_apply(used, [&](size_t i) {
    c10::DeviceGuard guard(devices_[i]);
    auto part = b.slice(static_cast<int64_t>(i) * chunk, std::min<int64_t>(rows, (static_cast<int64_t>(i) + 1) * chunk));
    if (devices_[i] != devices_[0]) part = part.to(devices_[i]);
    weight[i] = static_cast<double>(part.size()) / static_cast<double>(rows);
    train::AutocastGuard autocast(devices_[i].type(), ctx_.engine.autocast());
    outs[i] = module(i).forward(part.input_ids, part.token_type_ids, part.attention_mask, part.start_positions,
                                part.end_positions);
  });
  timer.mark(train::Phase::Forward);
  // Each replica's loss is the mean over its rows; weighted by its share of
  // the rows, the summed gradient is that of the mean over the whole batch.
  parallel_apply(used, [&](size_t i) {
    c10::DeviceGuard guard(devices_[i]);
    (outs[i].loss * (scale * weight[i])).backward();
  });
  timer.mark(train::Phase::Backward);

  // reduce onto the first device (DataParallel's Broadcast backward).
  timer.comm_begin();
  {
    at::NoGradGuard no_grad;
    for (size_t i = 1; i < used; ++i) {
      auto& rp = replica_params_[i - 1];
      for (size_t k = 0; k < params_.size(); ++k) {
        auto& g = rp[k].mutable_grad();
        if (!g.defined()) continue;
        auto& mg = params_[k].mutable_grad();
        if (mg.defined()) mg.add_(g.to(devices_[0]));
        else mg = g.to(devices_[0]).clone();
        g = at::Tensor();
      }
    }
  }
  timer.comm_end();
  timer.mark(train::Phase::GradSync);

  at::Tensor loss = outs[0].loss.detach() * weight[0];
  for (size_t i = 1; i < used; ++i) loss = loss + outs[i].loss.detach().to(devices_[0]) * weight[i];
  return loss;
}

namespace dp {
std::unique_ptr<Strategy> make(const Choice& c) { return std::make_unique<Dp>(c); }
}  // namespace dp

}  // namespace hpcbench::strategies
