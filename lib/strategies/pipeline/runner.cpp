#include "strategies/pipeline/runner.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "model/bert.h"
#include "train/amp.h"
#include "train/step_timer.h"

namespace hpcbench::strategies::pipeline {

namespace {

// Tags keep a micro-batch's activation and its gradient apart on any backend
// that matches messages by tag (Gloo); NCCL pairs them by order, which the
// schedules keep the same on both sides.
int activation_tag(int m) { return 2 * m; }
int gradient_tag(int m) { return 2 * m + 1; }

}  // namespace

StageRunner::StageRunner(PipelineStage stage, StageLinks links, RunnerOptions options, c10::Device device)
    : stage_(std::move(stage)),
      links_(links),
      opts_(std::move(options)),
      device_(device),
      stamps_(device, opts_.graph_events) {
  if (!stage_->first() && links_.prev < 0) fail("internal: stage {} has no previous rank", stage_->stage());
  if (!stage_->last() && links_.next < 0) fail("internal: stage {} has no next rank", stage_->stage());
  if ((links_.prev >= 0 || links_.next >= 0) && !links_.comm)
    fail("internal: a pipeline stage with neighbours needs a communicator");
}

StageRunner::~StageRunner() {
  // A step that failed half-way may leave sends in flight; their buffers
  // must outlive them (the Comm's own failure has been reported).
  try {
    wait_sends();
  } catch (...) {
  }
}

void StageRunner::wait_sends() {
  for (auto& p : sends_) links_.comm->wait(p);
  sends_.clear();
  send_buffers_.clear();
}

at::Tensor StageRunner::step(const std::vector<train::Batch>& micro, double scale, train::StepTimer* timer,
                             bool timed) {
  const int m_count = static_cast<int>(micro.size());
  if (m_count < 1) fail("internal: a pipeline step without micro-batches");
  int64_t rows = 0;
  for (auto& b : micro) rows += b.size();
  // Each micro-batch's loss is a mean over its rows: weighted by its share of
  // the rows, their sum is the mean over the whole batch, however it was cut.
  std::vector<double> share;
  for (auto& b : micro) share.push_back(static_cast<double>(b.size()) / static_cast<double>(rows));
  inputs_.assign(size_t(m_count), at::Tensor());
  outputs_.assign(size_t(m_count), at::Tensor());
  losses_.assign(size_t(m_count), at::Tensor());
  ran_.clear();
  timed_ = timed;
  if (timed_) stamps_.begin(m_count);
  for (const auto& a : stage_order(opts_.schedule, stage_->stage(), stage_->stages(), m_count)) {
    if (a.type == Action::Forward) {
      forward(a.micro, micro[size_t(a.micro)]);
      if (timer) timer->mark(train::Phase::Forward);
    } else {
      backward(a.micro, scale * share[size_t(a.micro)]);
      if (timer) timer->mark(train::Phase::Backward);
    }
    ran_.push_back(a);
  }
  // A send's buffer is reused by nothing, but the step is not over until the
  // neighbour has it: waiting here is part of this stage's bubble.
  wait_sends();
  if (timed_) stamps_.end();
  if (!stage_->last()) return {};
  // The losses leave the step in storage made once (written in place, as a
  // replay writes it), not in tensors the next step would free.
  if (!micro_loss_.defined() || micro_loss_.size(0) < m_count)
    micro_loss_ = at::empty({m_count}, losses_.front().options());
  micro_count_ = m_count;
  at::Tensor mean;
  for (size_t m = 0; m < losses_.size(); ++m) {
    micro_loss_.select(0, static_cast<int64_t>(m)).copy_(losses_[m]);
    auto l = losses_[m] * share[m];
    mean = mean.defined() ? mean + l : l;
  }
  losses_.assign(losses_.size(), at::Tensor());
  return mean;
}

std::vector<at::Tensor> StageRunner::micro_losses() const {
  if (!micro_loss_.defined()) return {};
  return micro_loss_.narrow(0, 0, micro_count_).unbind(0);
}

void StageRunner::forward(int m, const train::Batch& b) {
  auto& stage = *stage_;
  at::Tensor input;
  if (stage.first()) {
    input = b.input_ids;
  } else {
    input = at::empty({b.input_ids.size(0), b.input_ids.size(1), stage.config().hidden_size},
                      at::TensorOptions().device(device_).dtype(opts_.wire));
    auto recv = links_.comm->recv_async(input, links_.prev, activation_tag(m),
                                        fmt::format("pipeline recv activations {}", m));
    links_.comm->wait(recv);
    input.requires_grad_(true);
  }
  const size_t t0 = timed_ ? stamps_.record() : 0;
  at::Tensor out;
  {
    train::AutocastGuard autocast(device_.type(), opts_.precision);
    out = stage_->forward(input, b.token_type_ids, b.attention_mask);
  }
  if (stage.last()) {
    losses_[size_t(m)] = model::qa_output(out, b.start_positions, b.end_positions).loss;
  } else {
    out = out.to(opts_.wire);
    auto buffer = out.detach().contiguous();
    sends_.push_back(links_.comm->send_async(buffer, links_.next, activation_tag(m),
                                             fmt::format("pipeline send activations {}", m)));
    send_buffers_.push_back(buffer);
  }
  if (timed_) stamps_.busy(t0, stamps_.record());
  inputs_[size_t(m)] = stage.first() ? at::Tensor() : input;
  outputs_[size_t(m)] = stage.last() ? at::Tensor() : out;
}

void StageRunner::backward(int m, double loss_scale) {
  auto& stage = *stage_;
  at::Tensor grad;
  if (!stage.last()) {
    grad = at::empty_like(outputs_[size_t(m)], at::MemoryFormat::Contiguous);
    auto recv = links_.comm->recv_async(grad, links_.next, gradient_tag(m),
                                        fmt::format("pipeline recv gradients {}", m));
    links_.comm->wait(recv);
  }
  const size_t t0 = timed_ ? stamps_.record() : 0;
  if (stage.last()) {
    (losses_[size_t(m)] * loss_scale).backward();
    losses_[size_t(m)] = losses_[size_t(m)].detach();
  } else {
    torch::autograd::backward({outputs_[size_t(m)]}, {grad});
  }
  if (!stage.first()) {
    auto g = inputs_[size_t(m)].grad();
    if (!g.defined()) fail("internal: stage {} got no gradient for micro-batch {}'s input", stage.stage(), m);
    auto buffer = g.contiguous();
    sends_.push_back(links_.comm->send_async(buffer, links_.prev, gradient_tag(m),
                                             fmt::format("pipeline send gradients {}", m)));
    send_buffers_.push_back(buffer);
  }
  if (timed_) stamps_.busy(t0, stamps_.record());
  inputs_[size_t(m)] = at::Tensor();
  outputs_[size_t(m)] = at::Tensor();
}

StageTimeline StageRunner::timeline() { return stamps_.timeline(); }

}  // namespace hpcbench::strategies::pipeline
