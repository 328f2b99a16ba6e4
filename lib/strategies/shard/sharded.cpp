#include "strategies/shard/sharded.h"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "core/error.h"
#include "dist/process_group.h"
#include "model/sharding_units.h"
#include "strategies/support.h"
#include <fmt/format.h>

namespace hpcbench::strategies::shard {

namespace {

}  // namespace

// Frees a gathered unit's memory while its tensors (and the views autograd
// saved) stay valid objects. The rule that makes this safe once waits no
// longer block the host (NCCL): only storage whose collective was waited for
// is freed (reshard() finishes the gather first; a reduction's buffers are
// dropped only after their wait). The wait puts the compute stream behind
// the collective, and the caching allocator hands a freed block only to work
// queued on that stream later, so the collective never sees its memory
// reused. c10d's own guard would not suffice here: it keeps the tensors
// (their StorageImpl) alive until the wait, not the DataPtr swapped out below.
void free_storage(const at::Tensor& t) {
  auto* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(at::DataPtr(nullptr, s->device()));
  s->set_nbytes(0);
}

void alloc_storage(const at::Tensor& t) {
  auto* s = t.storage().unsafeGetStorageImpl();
  const size_t nbytes = t.nbytes() + t.storage_offset() * t.element_size();
  if (s->nbytes() >= nbytes) return;
  s->set_data_ptr_noswap(s->allocator()->allocate(nbytes));
  s->set_nbytes(nbytes);
}

bool storage_allocated(const at::Tensor& t) { return t.storage().nbytes() > 0; }
size_t storage_bytes(const at::Tensor& t) { return t.defined() ? t.storage().nbytes() : 0; }

Sharded::Sharded(ShardingPlan plan, Record record) : plan_(std::move(plan)), record_(std::move(record)) {}

Sharded::~Sharded() {
  clear_grad_hooks(params_);
}

namespace {

c10::ScalarType dtype_named(const std::string& name, const std::string& flag) {
  if (name == "fp32") return c10::kFloat;
  if (name == "bf16") return c10::kBFloat16;
  if (name == "fp16") return c10::kHalf;
  fail("{} {}: must be fp32, bf16 or fp16", flag, name);
}

}  // namespace

std::vector<std::vector<int>> shard_groups(int group_size, const std::vector<std::string>& hosts, int world) {
  std::vector<std::vector<int>> groups;
  if (group_size > 0) {
    if (world % group_size != 0)
      fail("--shard-group-size {}: {} ranks do not split into groups of {}; use a divisor of the world size",
           group_size, world, group_size);
    for (int r = 0; r < world; ++r) {
      if (r % group_size == 0) groups.emplace_back();
      groups.back().push_back(r);
    }
    return groups;
  }
  if (hosts.empty()) {
    groups.emplace_back();
    for (int r = 0; r < world; ++r) groups.back().push_back(r);
    return groups;
  }
  if (static_cast<int>(hosts.size()) != world)
    fail("internal: {} host names for {} ranks", hosts.size(), world);
  std::map<std::string, size_t> index;
  for (int r = 0; r < world; ++r) {
    auto [it, added] = index.emplace(hosts[size_t(r)], groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  for (auto& g : groups)
    if (g.size() != groups.front().size())
      fail("--sharding hybrid: node {} runs {} ranks and node {} runs {}; hybrid sharding needs the same number "
           "on every node (or --shard-group-size)", hosts[size_t(groups.front().front())], groups.front().size(),
           hosts[size_t(g.front())], g.size());
  return groups;
}

// The optimizer of a sharded run: AdamW over this rank's partitions, the
// global norm from the partitions' partial norms, the replicated parameters
// gathered after the step, the whole model gathered on demand.
class ShardedUpdater final : public Updater {
 public:
  ShardedUpdater(Sharded& engine, const train::OptimizerConfig& cfg) : e_(engine) {
    // A decayed and a non-decayed group, as make_adamw builds them; ATen's
    // fused kernel steps them.
    std::vector<at::Tensor> decay, no_decay;
    for (auto& f : e_.flats_) (f.decay ? decay : no_decay).push_back(f.shard);
    auto options = [&](double wd) {
      return torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).eps(cfg.eps).weight_decay(wd);
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay.empty())
      groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options(cfg.weight_decay)));
    if (!no_decay.empty()) groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
    optimizer_ = std::make_unique<train::FusedAdamW>(groups, options(cfg.weight_decay));
    e_.optimizer_ = optimizer_.get();
  }
  ~ShardedUpdater() override { e_.optimizer_ = nullptr; }

  torch::optim::Optimizer& optimizer() override { return *optimizer_; }

  // The gradients the optimizer steps (the partitions'), for unscaling.
  std::vector<at::Tensor> params() const override {
    std::vector<at::Tensor> out;
    for (auto& f : e_.flats_) out.push_back(f.shard);
    return out;
  }

  // clip_grad_norm_ over the whole model: the partial squared norms of the
  // partitions summed over ranks.
  at::Tensor clip(double max_norm) override {
    at::NoGradGuard no_grad;
    // The partitions' gradients are fp32 (reduced into fp32 buffers).
    std::vector<at::Tensor> grads;
    for (auto& f : e_.flats_)
      if (f.shard.grad().defined()) grads.push_back(f.shard.grad());
    // A few operations whatever the number of flat parameters (FSDP2 clips
    // with foreach as well): this rank's squared partial norm ...
    auto sq = grads.empty() ? at::zeros({1}, e_.flats_.front().full.options().dtype(at::kFloat))
                            : at::stack(at::_foreach_norm(grads, 2)).square().sum().reshape({1});
    // ... summed over the partitions of one copy (hybrid's other groups hold the same).
    e_.shard_comm_->allreduce(sq, false, "all_reduce of the gradient norm");
    auto norm = sq.sqrt().squeeze();  // 0-dim: the form _foreach_mul_ takes
    // torch.nn.utils.clip_grad_norm_: scaled by min(1, max_norm / (norm + 1e-6)).
    auto coef = (max_norm / (norm + 1e-6)).clamp_max(1.0);
    if (!grads.empty()) at::_foreach_mul_(grads, coef);
    return norm;
  }

  bool all_finite(bool local_finite) override {
    auto bad = at::full({1}, local_finite ? 0.0f : 1.0f, at::TensorOptions().device(e_.ctx_.device));
    e_.ctx_.comm->allreduce(bad, false, "all_reduce of the fp16 overflow verdict");
    // A host sync, once per step and only under fp16 loss scaling: every rank
    // must skip or take the step on the same verdict (torch's GradScaler reads
    // found_inf on the host as well).
    return bad.item<float>() == 0.0f;
  }

  // The step; then replicated parameters (zero 1/2) are all-gathered.
  void step() override {
    optimizer_->step();
    e_.note_peak();
    e_.new_step_ = true;
    if (e_.plan_.shard_params) return;  // the partitions are the parameters
    at::NoGradGuard no_grad;
    for (auto& f : e_.flats_)
      e_.shard_comm_->allgather(f.full, e_.gather_input(f), "all_gather of the updated parameters");
  }

  void zero_grad() override { optimizer_->zero_grad(/*set_to_none=*/true); }

  // Every parameter gathered into the model; the next forward_backward reshards.
  void gather_whole() override { e_.unshard_model(); }

  // Parameters, gradients and optimizer states this rank held at its peak so
  // far (the current state included): its partitions, and the largest set of
  // gathered units and full gradients it held at once.
  size_t state_bytes() const override { return e_.current_bytes(false) + e_.peak_transient_; }

 private:
  Sharded& e_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
};

Topology Sharded::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  if (!ctx.comm) fail("--strategy {} needs the job's communicator (internal: none was created)", plan_.name);
  auto& comm = *ctx.comm;
  const int world = comm.size();

  mixed_ = ctx.precision == "bf16" || ctx.precision == "fp16";
  compute_dtype_ = mixed_ ? dtype_named(ctx.precision, "--precision") : c10::kFloat;
  reduce_dtype_ = plan_.reduce_dtype.empty() ? compute_dtype_ : dtype_named(plan_.reduce_dtype, "--reduce-dtype");
  if (mixed_ && plan_.reduce_dtype.empty()) plan_.reduce_dtype = ctx.precision;

  shard_comm_ = &comm;
  if (plan_.hybrid) {
    auto groups = shard_groups(plan_.shard_group, ctx.hosts, world);
    const int me = comm.rank();
    size_t g = 0, pos = 0;
    for (size_t i = 0; i < groups.size(); ++i)
      for (size_t k = 0; k < groups[i].size(); ++k)
        if (groups[i][k] == me) g = i, pos = k;
    std::vector<int> replicate_members;
    for (auto& grp : groups) replicate_members.push_back(grp[pos]);
    std::sort(replicate_members.begin(), replicate_members.end());
    plan_.shard_group = static_cast<int>(groups[g].size());
    // Every rank creates its shard group, then its replicate group: the
    // order is the same everywhere, so no rendezvous waits on another.
    shard_group_ = comm.subgroup(fmt::format("shard.{}", g), groups[g]);
    if (replicate_members.size() > 1)
      replicate_group_ = comm.subgroup(fmt::format("replicate.{}", pos), replicate_members);
    shard_comm_ = shard_group_.get();
  }
  if (!plan_.shard_params) plan_.prefetch = false;  // nothing to gather between uses
  const int parts = shard_comm_->size(), part = shard_comm_->rank();

  // Units in forward order, as the model's wrap policy gives them; within a
  // unit, decayed then non-decayed.
  std::map<std::pair<size_t, bool>, size_t> flat_of;
  auto policy = model::sharding_units(*model);
  for (size_t u = 0; u < policy.size(); ++u) {
    Unit unit;
    unit.name = policy[u].name;
    unit.gather_what = "all_gather of " + unit.name;
    unit.reduce_what = (plan_.shard_grads ? "reduce_scatter of " : "all_reduce of ") + unit.name;
    unit.replicate_what = "all_reduce across shard groups of " + unit.reduce_what;
    unit.module = policy[u].module;
    units_.push_back(std::move(unit));
    for (auto& np : policy[u].module->named_parameters(true)) {
      auto& p = np.value();
      if (!p.requires_grad()) continue;
      const std::string name = policy[u].prefix + np.key();
      bool decay = train::decays(name);
      auto key = std::make_pair(u, decay);
      if (!flat_of.count(key)) {
        flat_of[key] = flats_.size();
        FlatParam f;
        f.decay = decay;
        f.unit = u;
        flats_.push_back(std::move(f));
        units_[u].flats.push_back(flat_of[key]);
      }
      auto& f = flats_[flat_of[key]];
      f.params.push_back(p);
      f.names.push_back(name);
      f.offsets.push_back(f.numel);
      f.numel += p.numel();
      units_[u].params.push_back(params_.size());
      unit_of_.push_back(u);
      params_.push_back(p);
    }
  }
  size_t in_model = 0;
  for (auto& p : model->parameters())
    if (p.requires_grad()) ++in_model;
  if (in_model != params_.size())
    fail("{}: the model's sharding units hold {} of its {} parameters", plan_.name, params_.size(), in_model);
  // Decayed flats first, as make_adamw orders its groups.
  for (auto& u : units_)
    std::stable_sort(u.flats.begin(), u.flats.end(), [&](size_t a, size_t b) { return flats_[a].decay > flats_[b].decay; });

  check_same_model(comm, plan_.name, fmt::format("{} tensors in {} flat parameters", params_.size(), flats_.size()));

  at::NoGradGuard no_grad;
  for (auto& f : flats_) {
    const int64_t padded = padded_numel(f.numel, parts);
    f.shard_numel = padded / parts;
    auto master = at::zeros({padded}, f.params.front().options().dtype(at::kFloat).requires_grad(false));
    for (size_t k = 0; k < f.params.size(); ++k)
      master.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()).copy_(f.params[k]);
    comm.broadcast(master, 0);  // rank 0's initial state wins, whatever each rank drew
    auto slice = master.narrow(0, part * f.shard_numel, f.shard_numel);
    // The optimizer's partition is a view of the replicated fp32 parameters
    // when those exist (zero 1/2 in fp32), otherwise memory of its own.
    f.shard_is_view = !plan_.shard_params && !mixed_;
    f.shard = f.shard_is_view ? slice : slice.clone();
    f.full = mixed_ ? master.to(compute_dtype_) : master;
  }
  use_compute_views();
  if (plan_.shard_params)
    for (auto& u : units_) reshard(u);
  install_grad_ready_hooks(params_, [this](size_t k) { on_grad_ready(k); });

  auto t = replica_topology(ctx);
  t.options = record_(plan_);
  t.state_theory_bytes = theoretical_state_bytes();
  t.updater = std::make_unique<ShardedUpdater>(*this, ctx.optimizer);
  return t;
}

// The module's parameters become views of the flat buffers the model
// computes with (compute dtype).
void Sharded::use_compute_views() {
  for (auto& f : flats_)
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].set_data(f.full.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()));
  master_views_ = false;
}

at::Tensor Sharded::gather_input(const FlatParam& f) const {
  if (mixed_) return f.shard.detach().to(compute_dtype_);
  // A partition that is a view of the gather's output must be copied first;
  // one with memory of its own is sent as it is.
  return f.shard_is_view ? f.shard.detach().clone() : f.shard.detach();
}

void Sharded::gather(Unit& u) {
  if (u.gathered) return;
  start_gather(u);
  finish_gather(u);
}

void Sharded::start_gather(Unit& u) {
  if (u.gathered || !u.inflight.empty()) return;
  at::NoGradGuard no_grad;
  // Inputs first, collectives after: nothing computes between a unit's
  // all-gathers and the wait that may follow them.
  for (auto i : u.flats) {
    alloc_storage(flats_[i].full);
    // Written behind autograd's back: the parameters' version counters are
    // their own (set_data), so tensors saved for backward stay valid.
    u.inflight_inputs.push_back(gather_input(flats_[i]));
  }
  for (size_t k = 0; k < u.flats.size(); ++k)
    u.inflight.push_back(
        shard_comm_->allgather_async(flats_[u.flats[k]].full, u.inflight_inputs[k], u.gather_what));
}

void Sharded::finish_gather(Unit& u) {
  if (u.gathered) return;
  for (auto& w : u.inflight) shard_comm_->wait(w);
  u.inflight.clear();
  u.inflight_inputs.clear();
  u.gathered = true;
  note_peak();
}

void Sharded::prefetch(size_t unit) {
  if (plan_.prefetch && unit < units_.size()) start_gather(units_[unit]);
}

void Sharded::reshard(Unit& u) {
  if (!plan_.shard_params) return;
  finish_gather(u);  // never free a buffer a collective is writing
  if (!u.gathered) return;
  for (auto i : u.flats) free_storage(flats_[i].full);
  u.gathered = false;
}

// One unit's gradients are complete: start reducing them into this rank's
// partition and free the full gradients. With overlap the collective runs
// while backward computes the next unit; it is finished (and accumulated,
// in fp32, over micro-steps) when the next unit reduces or backward ends, so
// that at most one unit's reduction is in flight, as FSDP limits it.
void Sharded::reduce(Unit& u) {
  note_peak();
  complete_reductions();
  auto& comm = *ctx_.comm;
  const int world = comm.size(), parts = shard_comm_->size();
  at::NoGradGuard no_grad;
  // Every send buffer first, collectives after (as for gathers).
  const size_t first = reductions_.size();
  for (auto i : u.flats) {
    auto& f = flats_[i];
    Reduction r;
    r.flat = i;
    r.unit = &u;
    const int64_t padded = f.shard_numel * parts;
    // The unit's gradients into the send buffer (cast to the reduce dtype on
    // the way) by one cat, as FSDP2's copy-in does, instead of a copy per
    // parameter; only the padding is zeroed. A parameter without a gradient
    // (unused in this forward) takes part as zeros, copied one by one.
    std::vector<at::Tensor> grads;
    for (auto& p : f.params) {
      if (!p.grad().defined()) break;
      grads.push_back(p.grad().reshape({-1}));
    }
    if (grads.size() == f.params.size()) {
      r.send = at::empty({padded}, f.full.options().dtype(reduce_dtype_));
      auto used = f.numel == padded ? r.send : r.send.narrow(0, 0, f.numel);
      at::cat_out(used, grads);
      if (f.numel < padded) r.send.narrow(0, f.numel, padded - f.numel).zero_();
    } else {
      r.send = at::zeros({padded}, f.full.options().dtype(reduce_dtype_));
      for (size_t k = 0; k < f.params.size(); ++k) {
        auto& p = f.params[k];
        if (p.grad().defined()) r.send.narrow(0, f.offsets[k], p.numel()).view(p.sizes()).copy_(p.grad());
      }
    }
    grads.clear();
    for (auto& p : f.params) p.mutable_grad() = at::Tensor();
    // Divided before the sum, as DDP and FSDP do, so that the sum is the
    // mean and fp16 sums do not overflow.
    if (world > 1) r.send.mul_(1.0 / world);
    if (plan_.shard_grads) r.part = at::empty({f.shard_numel}, r.send.options());
    reductions_.push_back(std::move(r));
  }
  for (size_t k = first; k < reductions_.size(); ++k) {
    auto& r = reductions_[k];
    r.work = plan_.shard_grads ? shard_comm_->reduce_scatter_async(r.part, r.send, r.unit->reduce_what)
                               : comm.allreduce_async(r.send, r.unit->reduce_what);
  }
  if (!plan_.overlap) complete_reductions();
  if (plan_.shard_params) reshard(u);
}

void Sharded::complete_reductions() {
  if (reductions_.empty()) return;
  auto& comm = *ctx_.comm;
  at::NoGradGuard no_grad;
  for (auto& r : reductions_) {
    auto& f = flats_[r.flat];
    (plan_.shard_grads ? *shard_comm_ : comm).wait(r.work);
    if (plan_.shard_grads) {
      if (replicate_group_) replicate_group_->allreduce(r.part, false, r.unit->replicate_what);
      if (f.shard.grad().defined()) f.shard.mutable_grad().add_(r.part);
      else f.shard.mutable_grad() = r.part.to(at::kFloat);
    } else {
      if (!f.grad_full.defined()) f.grad_full = at::zeros(r.send.sizes(), r.send.options().dtype(at::kFloat));
      if (!f.shard.grad().defined()) {
        f.grad_full.zero_();
        // Shares grad_full's memory without being an autograd view: the
        // optimizer's zero_grad detaches gradients in place, which views refuse.
        auto g = at::empty({0}, f.grad_full.options());
        g.set_(f.grad_full.storage(), comm.rank() * f.shard_numel, {f.shard_numel}, {1});
        f.shard.mutable_grad() = g;
      }
      f.grad_full.add_(r.send);
    }
  }
  // Dropped only now, after their waits (see free_storage).
  reductions_.clear();
}

void Sharded::on_grad_ready(size_t index) {
  auto& u = units_[unit_of_[index]];
  if (u.pending > 0 && --u.pending == 0) reduce(u);
}

void Sharded::before(size_t unit) {
  gather(units_[unit]);
  prefetch(unit + 1);
}

void Sharded::after(size_t unit, const at::Tensor& output) {
  if (!plan_.reshard_after_forward) return;
  reshard(units_[unit]);
  // Gathered again as soon as backward reaches this unit's output; the unit
  // before it (the next to run backward) is prefetched then.
  if (output.requires_grad()) {
    auto out = output;
    out.register_hook([this, unit](const at::Tensor&) {
      gather(units_[unit]);
      if (unit > 0) prefetch(unit - 1);
    });
  }
}

at::Tensor Sharded::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                     bool, train::StepTimer& timer) {
  new_step_ = false;
  if (master_views_) use_compute_views();
  for (auto& u : units_) {
    u.pending = u.params.size();
    if (resharded_) reshard(u);
  }
  resharded_ = false;
  // Partitioned parameters are gathered around each unit by the model's own
  // forward calling this engine's hooks; only in training: an evaluation
  // forward (after unshard_model) must issue no collective, as ranks
  // evaluate different numbers of batches.
  struct Hooks {
    model::BertForQuestionAnsweringImpl* m;
    Hooks(model::BertForQuestionAnsweringImpl* m, model::UnitHooks* h) : m(m) { m->set_unit_hooks(h); }
    ~Hooks() { m->set_unit_hooks(nullptr); }
  } hooks(model.ptr().get(), plan_.shard_params ? this : nullptr);
  return forward_backward_step(model, b, scale, ctx_.device.type(), ctx_.precision, timer);
}

void Sharded::finish_gradients(train::StepTimer& timer) {
  // Units whose hooks did not all fire (a parameter unused in this forward)
  // are reduced now, in unit order on every rank.
  for (auto& u : units_)
    if (u.pending > 0) {
      u.pending = 0;
      gather(u);  // so that reshard finds it as reduce expects
      reduce(u);
    }
  complete_reductions();
  timer.mark(train::Phase::GradSync);
}

void Sharded::unshard_model() {
  if (!mixed_) {
    for (auto& u : units_) gather(u);
    resharded_ = plan_.shard_params;
    return;
  }
  // Checkpoints and evaluation see the fp32 masters, not their bf16/fp16
  // copies; the next forward_backward goes back to the compute copies.
  at::NoGradGuard no_grad;
  for (auto& u : units_) finish_gather(u);
  for (auto& f : flats_) {
    auto master = at::empty({f.shard_numel * shard_comm_->size()}, f.shard.options());
    shard_comm_->allgather(master, f.shard.detach().clone());
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].set_data(master.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()));
  }
  master_views_ = true;
}

// Persistent: what survives between steps (partitions, replicated
// parameters and gradients, Adam's moments). Transient: gathered units of
// sharded parameters and the full gradients of the unit being reduced. The
// optimizer creates its moments in the first step, after the first
// backward, so the peak is persistent now + the largest transient seen.
size_t Sharded::current_bytes(bool transient) const {
  size_t bytes = 0;
  for (auto& f : flats_) {
    if (plan_.shard_params == transient) bytes += storage_bytes(f.full);
    if (transient) continue;
    if (!f.shard_is_view) bytes += storage_bytes(f.shard);
    bytes += storage_bytes(f.grad_full);
    if (f.shard.grad().defined() && !f.grad_full.defined()) bytes += f.shard.grad().nbytes();
  }
  if (transient) {
    for (auto& p : params_)
      if (p.grad().defined()) bytes += p.grad().nbytes();
    for (auto& r : reductions_) bytes += storage_bytes(r.send) + storage_bytes(r.part);
    return bytes;
  }
  if (optimizer_)
    for (const auto& [key, state] : optimizer_->state())
      if (auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
        bytes += s->exp_avg().nbytes() + s->exp_avg_sq().nbytes();
  return bytes;
}

void Sharded::note_peak() { peak_transient_ = std::max(peak_transient_, current_bytes(true)); }

int64_t Sharded::parameters() const {
  int64_t n = 0;
  for (auto& f : flats_) n += f.numel;
  return n;
}

std::vector<int64_t> Sharded::unit_sizes() const {
  std::vector<int64_t> sizes;
  for (auto& u : units_) {
    int64_t n = 0;
    for (auto i : u.flats) n += flats_[i].numel;
    sizes.push_back(n);
  }
  return sizes;
}

int64_t Sharded::largest_unit() const {
  auto sizes = unit_sizes();
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

int Sharded::shard_ranks() const { return shard_comm_ ? shard_comm_->size() : 1; }

double Sharded::theoretical_state_bytes() const {
  MemoryInputs in;
  in.units = unit_sizes();
  in.shape = {1, ctx_.comm ? ctx_.comm->size() : 1};
  in.compute_bytes = static_cast<int>(c10::elementSize(compute_dtype_));
  in.reduce_bytes = static_cast<int>(c10::elementSize(reduce_dtype_));
  return plan_state(plan_, in).total();
}

}  // namespace hpcbench::strategies::shard
