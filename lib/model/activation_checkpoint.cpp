#include "model/activation_checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <optional>

#include "core/error.h"

namespace hpcbench::model {

namespace {

// What the first run saw, to be seen again by the second.
struct RunState {
  c10::DeviceType device_type = c10::kCPU;
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kFloat;
  at::Generator generator;  // the input's device's default generator
  at::Tensor rng;           // its state before the first run

  static RunState capture(const at::Tensor& x) {
    RunState s;
    s.device_type = x.device().type();
    s.autocast = at::autocast::is_autocast_enabled(s.device_type);
    s.autocast_dtype = at::autocast::get_autocast_dtype(s.device_type);
    s.generator = x.is_cpu() ? at::detail::getDefaultCPUGenerator() : at::globalContext().defaultGenerator(x.device());
    std::lock_guard<std::mutex> lock(s.generator.mutex());
    s.rng = s.generator.get_state();
    return s;
  }
};

// Puts the first run's random and autocast state back for the recompute and
// restores the current state after it, so that recomputing changes neither
// the random stream that later work draws from nor the autocast setting.
class Replay {
 public:
  explicit Replay(const RunState& s) : s_(s), generator_(s.generator) {
    {
      std::lock_guard<std::mutex> lock(generator_.mutex());
      now_rng_ = generator_.get_state();
      generator_.set_state(s_.rng);
    }
    now_autocast_ = at::autocast::is_autocast_enabled(s_.device_type);
    now_dtype_ = at::autocast::get_autocast_dtype(s_.device_type);
    at::autocast::set_autocast_enabled(s_.device_type, s_.autocast);
    at::autocast::set_autocast_dtype(s_.device_type, s_.autocast_dtype);
    if (s_.autocast) at::autocast::increment_nesting();
  }
  ~Replay() {
    if (s_.autocast && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(s_.device_type, now_autocast_);
    at::autocast::set_autocast_dtype(s_.device_type, now_dtype_);
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(now_rng_);
  }
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

 private:
  const RunState& s_;
  at::Generator generator_;  // a handle to the same generator
  at::Tensor now_rng_;
  bool now_autocast_ = false;
  at::ScalarType now_dtype_ = at::kFloat;
};

// The backward of a checkpointed call: runs the function again with grad
// mode on and back-propagates the incoming gradient through that run. The
// parameters it used receive their gradients there (their AccumulateGrad
// nodes, and any hooks on them, run as in an ordinary backward); the input's
// gradient is handed on to the rest of the graph.
struct CheckpointBackward final : torch::autograd::Node {
  TensorFunction fn;
  at::Tensor input;  // detached
  bool input_requires_grad = false;
  RunState state;

  std::string name() const override { return "hpcbench::CheckpointBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    at::Tensor x = input.detach().requires_grad_(input_requires_grad);
    at::Tensor y;
    {
      Replay replay(state);
      torch::autograd::AutoGradMode grad(true);
      // A view, not the leaf itself: autocast caches its casts of leaves that
      // require grad (meant for weights), which would make the layer's uses of
      // x share one bf16 copy and sum their gradients in bf16, where the
      // first run summed them in fp32.
      y = fn(x.view_as(x));
    }
    // Only x's gradient is returned; the parameters' accumulate as usual.
    if (y.requires_grad()) torch::autograd::backward({y}, {grads.at(0)}, /*retain_graph=*/false, /*create_graph=*/false);
    input.reset();
    fn = nullptr;
    return {input_requires_grad ? x.grad() : at::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed(const TensorFunction& fn, const at::Tensor& x) {
  if (!torch::autograd::GradMode::is_enabled()) return fn(x);
  auto state = RunState::capture(x);
  at::Tensor y;
  {
    torch::autograd::AutoGradMode no_grad(false);
    y = fn(x.detach());
  }
  if (!y.defined() || !at::isFloatingType(y.scalar_type()))
    fail("internal: a checkpointed function must return a floating-point tensor");
  std::shared_ptr<CheckpointBackward> node(new CheckpointBackward(), torch::autograd::deleteNode);
  node->fn = fn;
  node->input = x.detach();
  node->input_requires_grad = x.requires_grad();
  node->state = std::move(state);
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::create_gradient_edge(y, node);
  return y;
}

}  // namespace hpcbench::model
