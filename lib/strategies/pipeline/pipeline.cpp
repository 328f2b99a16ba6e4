#include "strategies/pipeline/pipeline.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "specs/mesh.h"
#include "strategies/pipeline/cut.h"
#include "strategies/master_weights.h"
#include "strategies/pipeline/stages.h"
#include "strategies/support.h"
#include "train/optimizer.h"
#include "train/setup.h"

namespace hpcbench::strategies {

namespace {

// Steps one stage's parameters; the gradient norm and the fp16 verdict are
// the whole pipeline's (the stage's replicas hold the same gradients after
// their all-reduce, so the pipeline's ranks decide for them). With `masters`
// (--fused under bf16: the stage's weights resident in bf16) the stage's
// fp32 masters step as the replicated strategies' do (master_weights.h, the
// fused master-weight AdamW); only the norm's all-reduce is the stage's.
class StageUpdater final : public Updater {
 public:
  StageUpdater(model::BertForQuestionAnswering whole, std::vector<int64_t> counts, int stage, dist::Comm* pp,
               const train::OptimizerConfig& cfg, std::shared_ptr<MasterWeights> masters)
      : whole_(std::move(whole)), counts_(std::move(counts)), stage_(stage), pp_(pp), masters_(std::move(masters)) {
    pipeline::PipelineStage mine(*whole_, stage_, counts_);
    params_ = mine->parameters();
    optimizer_ = masters_ ? adamw_of_masters(*mine, *masters_, cfg) : train::make_adamw(*mine, cfg);
    // What other stages hold is freed here: a rank keeps its stage only.
    std::set<const void*> kept;
    for (auto& p : params_) kept.insert(p.unsafeGetTensorImpl());
    at::NoGradGuard no_grad;
    for (auto& p : whole_->parameters()) {
      if (kept.count(p.unsafeGetTensorImpl())) continue;
      freed_.push_back({p, p.sizes().vec()});
      p.set_data(at::empty({0}, p.options()));
    }
  }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  std::vector<at::Tensor> params() const override { return params_; }
  at::Tensor clip(double max_norm) override;
  bool all_finite(bool local_finite) override {
    if (pp_->size() == 1) return local_finite;
    auto bad = at::full({1}, local_finite ? 0.0 : 1.0, params_.front().options().dtype(at::kFloat));
    pp_->allreduce(bad, false, "pipeline overflow check");
    return bad.item<double>() == 0;
  }
  void step() override {
    if (masters_) masters_->step(*optimizer_);
    else optimizer_->step();
  }
  void zero_grad() override {
    if (masters_) masters_->zero_grad(*optimizer_);
    else optimizer_->zero_grad(/*set_to_none=*/true);
  }
  void gather_whole() override;
  size_t state_bytes() const override {
    std::vector<at::Tensor> held;
    if (masters_) held = masters_->held();
    return train::model_state_bytes(params_, *optimizer_, held);
  }

 private:
  struct Freed {
    at::Tensor param;
    std::vector<int64_t> sizes;
  };
  model::BertForQuestionAnswering whole_;
  std::vector<int64_t> counts_;
  int stage_;
  dist::Comm* pp_;
  std::shared_ptr<MasterWeights> masters_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::vector<Freed> freed_;
};

at::Tensor StageUpdater::clip(double max_norm) {
  if (masters_ && masters_->fused()) {
    // The fused master step's norm over the stage's bf16 gradients; with
    // other stages, its square summed over the pipeline on the device before
    // the coefficient is formed.
    if (pp_->size() == 1) return masters_->clip_fused(max_norm);
    auto sq = masters_->grad_squares_fused();
    pp_->allreduce(sq, false, "pipeline gradient norm");
    return masters_->clip_fused_to(sq.sqrt(), max_norm);
  }
  std::vector<at::Tensor> grads;
  if (masters_) {
    // The norm of the fp32 copies of the gradients, as the masters step them.
    for (const auto& m : masters_->clip_gradients()) grads.push_back(m.grad());
  } else {
    for (const auto& p : params_)
      if (p.grad().defined()) grads.push_back(p.grad());
  }
  at::NoGradGuard no_grad;
  auto sq = grads.empty() ? at::zeros({1}, params_.front().options().dtype(at::kFloat))
                          : at::stack(at::_foreach_norm(grads, 2)).to(at::kFloat).pow(2).sum().reshape({1});
  if (pp_->size() > 1) pp_->allreduce(sq, false, "pipeline gradient norm");
  auto total = sq.sqrt().reshape({});
  auto coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  if (!grads.empty()) at::_foreach_mul_(grads, coef);
  return total;
}

// Every stage's parameters broadcast from its rank in the pipeline (a
// stage's replicas hold the same ones). With masters a stage sends its fp32
// weights (it computes on their bf16 copies again from the next forward on),
// into the other stages' fp32 parameters, which never had masters.
void StageUpdater::gather_whole() {
  if (masters_) masters_->use_masters();
  at::NoGradGuard no_grad;
  for (auto& [p, sizes] : freed_) p.set_data(at::empty(sizes, p.options()));
  freed_.clear();
  if (pp_->size() == 1) return;
  for (int s = 0; s < static_cast<int>(counts_.size()); ++s) {
    pipeline::PipelineStage stage(*whole_, s, counts_);
    for (auto& p : stage->parameters()) {
      auto t = p.detach();
      pp_->broadcast(t, s);
    }
  }
}

// The options as the run resolved them, in a form labels can carry (a comma
// separates a label's options: stage layers are written 4/4/4).
std::string resolved_text(const Choice& choice, const pipeline::Layout& l, const std::vector<int64_t>& counts,
                          const Mesh& mesh) {
  Choice c = choice;
  c.set("stages", std::to_string(l.stages), "pipeline");
  c.set("dp-size", std::to_string(l.dp), "pipeline");
  if (!choice.as<pipeline::PipelineOptions>().stage_layers.empty())
    c.set("stage-layers", fmt::format("{}", fmt::join(counts, "/")), "pipeline");
  return c.options_text() + ",layout=" + mesh.label();
}

}  // namespace

Pipeline::Pipeline(const Choice& choice) : choice_(choice), opts_(choice.as<pipeline::PipelineOptions>()) {}

Pipeline::~Pipeline() = default;

SetUp Pipeline::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  if (!ctx.comm) fail("--strategy pipeline needs the job's communicator (internal: none was created)");
  const auto l = pipeline::layout_of(opts_, ctx.world_size);
  const auto counts = pipeline::stage_layer_counts(model->config().num_hidden_layers, l.stages,
                                                   pipeline::parse_stage_layers(opts_.stage_layers));
  if (auto why = pipeline::micro_batch_problem(opts_, ctx.batch_size); !why.empty()) fail("{}", why);
  const Mesh mesh(ctx.world_size, {l.dp, l.stages, 1});
  const auto me = mesh.coord_of(ctx.rank);
  if (l.dp == 1) {
    pp_comm_ = ctx.comm.get();
  } else {
    pp_owned_ = ctx.comm->subgroup(fmt::format("pp.{}", me.dp), mesh.pp_group(ctx.rank));
    pp_comm_ = pp_owned_.get();
  }
  if (l.dp > 1) {
    if (l.stages == 1) {
      dp_comm_ = ctx.comm.get();
    } else {
      dp_owned_ = ctx.comm->subgroup(fmt::format("dp.{}", me.pp), mesh.dp_group(ctx.rank));
      dp_comm_ = dp_owned_.get();
    }
  }
  const int s = me.pp;
  pipeline::PipelineStage stage(*model, s, counts);
  // --activation-checkpointing, as the trainer set it on the whole model.
  stage->set_activation_checkpointing(model->bert()->activation_checkpointing());
  pipeline::StageLinks links{pp_comm_, s > 0 ? s - 1 : -1, s + 1 < l.stages ? s + 1 : -1};
  // --fused under bf16: the stage's weights resident in bf16 over fp32
  // masters (the model's modules were built fused: packed QKV, the fused
  // kernels). Forward then runs without autocast, so activations and their
  // gradients cross between stages in the weights' dtype, as they pass
  // between layers inside a stage.
  const auto weights = weight_dtype(ctx.engine, /*gathered=*/false);
  masters_ = resident_weights(*stage, ctx.engine);
  pipeline::RunnerOptions ro;
  ro.schedule = pipeline::parse_schedule(opts_.schedule);
  ro.precision = ctx.engine.autocast();
  ro.wire = weights;
  ro.graph_events = ctx.engine.graph();
  runner_ = std::make_unique<pipeline::StageRunner>(stage, links, ro, ctx.device);
  params_ = stage->parameters();

  Topology t;
  t.replicas = l.dp;
  t.data_ranks = l.dp;
  t.data_rank = me.dp;
  // Every stage reads the micro-batch's rows (the first its ids, each the
  // attention mask, the last the answers); the last alone has a loss.
  t.reads_batches = true;
  t.computes_loss = stage->last();
  t.options = resolved_text(choice_, l, counts, mesh);
  // The largest stage's figure, as the run reports the largest rank's state.
  int64_t most = 0;
  for (int k = 0; k < l.stages; ++k) {
    int64_t n = 0;
    for (auto& p : pipeline::PipelineStage(*model, k, counts)->parameters()) n += p.numel();
    most = std::max(most, n);
  }
  // As the spec counts it (pipeline/spec.cpp): over masters, stepped by the
  // fused master step, no fp32 gradient copies.
  t.state_theory_bytes = replicated_state_bytes(most, masters_ != nullptr, static_cast<int>(at::elementSize(weights)));
  t.bubble_theory = pipeline::theoretical_bubble(l.stages, static_cast<int>(opts_.micro_batches));
  std::unique_ptr<Updater> updater =
      std::make_unique<StageUpdater>(model, counts, s, pp_comm_, ctx.optimizer, masters_);
  return {std::move(t), std::move(updater)};
}

at::Tensor Pipeline::forward_backward(model::BertForQuestionAnswering&, const train::Batch& batch, double scale,
                                      bool last_micro, train::StepTimer& timer) {
  // Rows cut as torch.tensor_split cuts them (the first rows % M one more);
  // a last batch of an epoch shorter than M rows runs as fewer micro-batches.
  const int64_t rows = batch.size();
  const int64_t m = std::min<int64_t>(opts_.micro_batches, rows);
  std::vector<train::Batch> micro;
  for (int64_t k = 0, begin = 0; k < m; ++k) {
    const int64_t n = rows / m + (k < rows % m ? 1 : 0);
    micro.push_back(batch.slice(begin, begin + n));
    begin += n;
  }
  ran_on_host_ = true;
  if (masters_) masters_->use_compute();  // after a checkpoint or an evaluation read the masters
  return runner_->step(micro, scale, &timer, last_micro);
}

void Pipeline::finish_gradients(train::StepTimer& timer) {
  if (dp_comm_) allreduce_gradients(params_, *dp_comm_, "pipeline data-parallel all_reduce");
  timer.mark(train::Phase::GradSync);
}

StepFacts Pipeline::step_facts() {
  // A replay of the captured step runs no host code of the strategy's: no
  // forward_backward since the last step's facts means one ran.
  if (!ran_on_host_) runner_->replayed();
  ran_on_host_ = false;
  auto b = runner_->bubble();
  return {b.idle(), b.window};
}

namespace pipeline {
std::unique_ptr<Strategy> make(const Choice& choice) { return std::make_unique<Pipeline>(choice); }
}  // namespace pipeline

}  // namespace hpcbench::strategies
