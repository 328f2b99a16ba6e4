#include "strategies/shard/sharded.h"

#include <algorithm>

#include "core/error.h"
#include "strategies/shard/accounting.h"
#include "strategies/shard/buffers.h"
#include "strategies/shard/gathers.h"
#include "strategies/shard/groups.h"
#include "strategies/shard/reduction.h"
#include "strategies/shard/updater.h"
#include "strategies/support.h"

namespace hpcbench::strategies::shard {

namespace {

c10::ScalarType dtype_named(const std::string& name) {
  if (name == "bf16") return c10::kBFloat16;
  if (name == "fp16") return c10::kHalf;
  return c10::kFloat;
}

}  // namespace

Sharded::Sharded(ShardingPlan plan, Record record) : record_(std::move(record)) { s_.plan = std::move(plan); }

Sharded::~Sharded() { clear_grad_hooks(s_.params); }

SetUp Sharded::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  s_.ctx = ctx;
  if (!ctx.comm) fail("--strategy {} needs the job's communicator (internal: none was created)", s_.plan.name);
  auto& plan = s_.plan;
  // The spec checked the dtypes against the precision (shard/plan.cpp).
  s_.compute_dtype = weight_dtype(ctx.engine, /*gathered=*/true);
  s_.mixed = s_.compute_dtype != c10::kFloat;
  s_.reduce_dtype = plan.reduce_dtype.empty() ? s_.compute_dtype : dtype_named(plan.reduce_dtype);
  if (s_.mixed && plan.reduce_dtype.empty()) plan.reduce_dtype = ctx.engine.precision;
  place(s_);
  if (!plan.shard_params) plan.prefetch = false;  // nothing to gather between uses

  flatten(s_, model);
  check_same_model(s_.comm(), plan.name,
                   fmt::format("{} tensors in {} flat parameters", s_.params.size(), s_.flats.size()));
  partition(s_);
  make_buffers(s_);
  use_compute_views(s_);
  if (plan.shard_params)
    for (auto& u : s_.units) reshard(s_, u);
  install_grad_ready_hooks(s_.params, [this](size_t k) { on_grad_ready(k); });

  auto t = replica_topology(ctx);
  t.options = record_(plan);
  t.state_theory_bytes = theoretical_state_bytes(s_);
  std::unique_ptr<Updater> updater = std::make_unique<ShardedUpdater>(s_, ctx.optimizer);
  return {std::move(t), std::move(updater)};
}

void Sharded::on_grad_ready(size_t index) {
  auto& u = s_.units[s_.unit_of[index]];
  if (u.pending > 0 && --u.pending == 0) reduce(s_, u);
}

void Sharded::before(size_t unit) {
  gather(s_, s_.units[unit]);
  prefetch(s_, unit + 1);
}

void Sharded::after(size_t unit, const at::Tensor& output) {
  if (!s_.plan.reshard_after_forward) return;
  reshard(s_, s_.units[unit]);
  // Gathered again as soon as backward reaches this unit's output; the unit
  // before it (the next to run backward) is prefetched then.
  if (output.requires_grad()) {
    auto out = output;
    out.register_hook([this, unit](const at::Tensor&) {
      gather(s_, s_.units[unit]);
      if (unit > 0) prefetch(s_, unit - 1);
    });
  }
}

at::Tensor Sharded::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                     bool, train::StepTimer& timer) {
  s_.new_step = false;
  if (s_.master_views) use_compute_views(s_);
  // A micro-step's backward reuses the gradient slots: the last one's
  // reduction must have read them.
  complete_reductions(s_);
  for (auto& u : s_.units) u.pending = u.params.size();
  // Partitioned parameters are gathered around each unit by the model's own
  // forward calling this engine's hooks; only in training: an evaluation
  // forward (after gather_whole) must issue no collective, as ranks
  // evaluate different numbers of batches.
  struct Hooks {
    model::BertForQuestionAnsweringImpl* m;
    Hooks(model::BertForQuestionAnsweringImpl* m, model::UnitHooks* h) : m(m) { m->set_unit_hooks(h); }
    ~Hooks() { m->set_unit_hooks(nullptr); }
  } hooks(model.ptr().get(), s_.plan.shard_params ? this : nullptr);
  // Resident weights: the compute copies are the bf16 weights forward runs
  // without autocast (master_weights.h).
  return forward_backward_step(model, b, scale, s_.ctx.device.type(), s_.ctx.engine, timer);
}

void Sharded::finish_gradients(train::StepTimer& timer) {
  // Units whose hooks did not all fire (a parameter unused in this forward)
  // are reduced now, in unit order on every rank.
  for (auto& u : s_.units)
    if (u.pending > 0) {
      u.pending = 0;
      gather(s_, u);  // so that reshard finds it as reduce expects
      reduce(s_, u);
    }
  complete_reductions(s_);
  timer.mark(train::Phase::GradSync);
}

int64_t Sharded::parameters() const { return shard::parameters(s_); }

int64_t Sharded::largest_unit() const {
  auto sizes = unit_sizes(s_);
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

}  // namespace hpcbench::strategies::shard
