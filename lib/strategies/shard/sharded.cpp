#include "strategies/shard/sharded.h"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/modules/linear.h>

#include <chrono>
#include <map>

#include "core/error.h"
#include "dist/process_group.h"
#include "model/bert_modules.h"
#include "strategies/shard/memory.h"
#include "train/amp.h"

namespace hpcbench::strategies::shard {

namespace {

using Clock = std::chrono::steady_clock;

struct GradReadyHook final : torch::autograd::PostAccumulateGradHook {
  GradReadyHook(Sharded* s, size_t index) : s(s), index(index) {}
  void operator()(const torch::autograd::Variable&) override { s->on_grad_ready(index); }
  Sharded* s;
  size_t index;
};

// "bert.encoder.layer.3.attention..." -> "layer.3"; the embeddings and the
// head are units of their own.
std::string unit_name(const std::string& param) {
  const std::string layer = "bert.encoder.layer.";
  if (param.starts_with(layer)) {
    auto dot = param.find('.', layer.size());
    return "layer." + param.substr(layer.size(), dot - layer.size());
  }
  if (param.starts_with("bert.embeddings.")) return "embeddings";
  return "head";
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

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

Sharded::Sharded(ShardingPlan plan) : plan_(std::move(plan)) {}

Sharded::~Sharded() {
  for (auto& p : params_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void Sharded::setup(model::BertForQuestionAnswering& model, const StrategyContext& ctx) {
  ctx_ = ctx;
  if (!ctx.comm) fail("--strategy {} needs the job's communicator (internal: none was created)", plan_.name);
  auto& comm = *ctx.comm;
  const int world = comm.size(), rank = comm.rank();

  // Units in forward order; within a unit, decayed then non-decayed.
  std::map<std::string, size_t> unit_index;
  auto bert = std::dynamic_pointer_cast<model::BertModelImpl>(model->named_children()["bert"]);
  auto add_unit = [&](const std::string& name, torch::nn::Module* m) {
    unit_index[name] = units_.size();
    units_.push_back(Unit{name, {}, {}, 0, true, m});
  };
  add_unit("embeddings", bert->embeddings.get());
  for (size_t i = 0; i < bert->layer->size(); ++i) add_unit("layer." + std::to_string(i), bert->layer[i].get());
  add_unit("head", model->named_children()["qa_outputs"].get());

  std::map<std::pair<size_t, bool>, size_t> flat_of;
  for (auto& np : model->named_parameters(true)) {
    auto& p = np.value();
    if (!p.requires_grad()) continue;
    auto it = unit_index.find(unit_name(np.key()));
    if (it == unit_index.end()) fail("{}: parameter {} belongs to no unit", plan_.name, np.key());
    size_t u = it->second;
    bool decay = train::decays(np.key());
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
    f.names.push_back(np.key());
    f.offsets.push_back(f.numel);
    f.numel += p.numel();
    units_[u].params.push_back(params_.size());
    unit_of_.push_back(u);
    params_.push_back(p);
  }
  // Decayed flats first, as make_adamw orders its groups.
  for (auto& u : units_)
    std::stable_sort(u.flats.begin(), u.flats.end(), [&](size_t a, size_t b) { return flats_[a].decay > flats_[b].decay; });

  auto shapes = comm.exchange(plan_.name + "/model", fmt::format("{} tensors in {} flat parameters", params_.size(), flats_.size()));
  for (size_t r = 0; r < shapes.size(); ++r)
    if (shapes[r] != shapes[0])
      fail("{}: rank {} has a different model ({}) from rank 0 ({}): every rank must use the same --model", plan_.name,
           r, shapes[r], shapes[0]);

  at::NoGradGuard no_grad;
  for (auto& f : flats_) {
    const int64_t padded = padded_numel(f.numel, world);
    f.shard_numel = padded / world;
    f.full = at::zeros({padded}, f.params.front().options().requires_grad(false));
    for (size_t k = 0; k < f.params.size(); ++k)
      f.full.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()).copy_(f.params[k]);
    comm.broadcast(f.full, 0);  // rank 0's initial state wins, whatever each rank drew
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].set_data(f.full.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()));
    auto slice = f.full.narrow(0, rank * f.shard_numel, f.shard_numel);
    f.shard_is_view = !plan_.shard_params;
    f.shard = f.shard_is_view ? slice : slice.clone();
  }
  for (auto& buf : model->buffers()) {
    auto t = buf.contiguous();
    comm.broadcast(t, 0);
    if (!t.is_same(buf)) buf.copy_(t);
  }
  if (plan_.shard_params)
    for (auto& u : units_) reshard(u);
  for (size_t k = 0; k < params_.size(); ++k)
    torch::autograd::impl::set_post_acc_grad_hooks(params_[k], std::make_unique<GradReadyHook>(this, k));
}

void Sharded::gather(Unit& u) {
  if (u.gathered) return;
  auto t0 = Clock::now();
  for (auto i : u.flats) {
    auto& f = flats_[i];
    alloc_storage(f.full);
    // Written behind autograd's back: the parameters' version counters are
    // their own (set_data), so tensors saved for backward stay valid.
    ctx_.comm->allgather(f.full, f.shard);
  }
  u.gathered = true;
  comm_ms_ += ms_since(t0);
  note_peak();
}

void Sharded::reshard(Unit& u) {
  if (!u.gathered || !plan_.shard_params) return;
  for (auto i : u.flats) free_storage(flats_[i].full);
  u.gathered = false;
}

// One unit's gradients are complete: reduce them into this rank's partition
// (accumulating over micro-steps) and free the full gradients.
void Sharded::reduce(Unit& u) {
  note_peak();
  auto t0 = Clock::now();
  auto& comm = *ctx_.comm;
  const int world = comm.size();
  at::NoGradGuard no_grad;
  for (auto i : u.flats) {
    auto& f = flats_[i];
    auto flat = at::zeros({f.shard_numel * world}, f.full.options());
    for (size_t k = 0; k < f.params.size(); ++k) {
      auto& p = f.params[k];
      if (p.grad().defined()) flat.narrow(0, f.offsets[k], p.numel()).view(p.sizes()).copy_(p.grad());
      p.mutable_grad() = at::Tensor();
    }
    // Divided before the sum, as DDP does, so that the sum is the mean.
    if (world > 1) flat.mul_(1.0 / world);
    if (plan_.shard_grads) {
      auto part = at::empty({f.shard_numel}, flat.options());
      comm.reduce_scatter(part, flat);
      if (f.shard.grad().defined()) f.shard.mutable_grad().add_(part);
      else f.shard.mutable_grad() = part;
    } else {
      comm.allreduce(flat);
      if (!f.grad_full.defined()) f.grad_full = at::zeros_like(flat);
      if (!f.shard.grad().defined()) {
        f.grad_full.zero_();
        // Shares grad_full's memory without being an autograd view: the
        // optimizer's zero_grad detaches gradients in place, which views refuse.
        auto g = at::empty({0}, f.grad_full.options());
        g.set_(f.grad_full.storage(), comm.rank() * f.shard_numel, {f.shard_numel}, {1});
        f.shard.mutable_grad() = g;
      }
      f.grad_full.add_(flat);
    }
  }
  comm_ms_ += ms_since(t0);
  if (plan_.shard_params) reshard(u);
}

void Sharded::on_grad_ready(size_t index) {
  auto& u = units_[unit_of_[index]];
  if (u.pending > 0 && --u.pending == 0) reduce(u);
}

at::Tensor Sharded::sharded_forward(model::BertForQuestionAnswering& model, const train::Batch& b) {
  // BertForQuestionAnswering::forward, unit by unit, so that each unit is
  // gathered just before it runs and freed after.
  auto bert = std::dynamic_pointer_cast<model::BertModelImpl>(model->named_children()["bert"]);
  auto& qa = *model->named_children()["qa_outputs"]->as<torch::nn::Linear>();
  const int64_t seq = b.input_ids.size(1);
  auto run_unit = [&](Unit& u, auto&& f) {
    gather(u);
    at::Tensor out = f();
    if (plan_.reshard_after_forward) {
      reshard(u);
      // Gathered again as soon as backward reaches this unit's output.
      if (out.requires_grad())
        out.register_hook([this, &u](const at::Tensor&) { gather(u); });
    }
    return out;
  };
  auto h = run_unit(units_.front(), [&] { return bert->embeddings->forward(b.input_ids, b.token_type_ids); });
  at::Tensor key_mask;
  if (b.attention_mask.defined()) key_mask = b.attention_mask.ne(0).view({b.input_ids.size(0), 1, 1, seq});
  at::Tensor additive;
  for (size_t i = 0; i < bert->layer->size(); ++i)
    h = run_unit(units_[i + 1], [&] { return bert->layer[i]->as<model::BertLayer>()->forward(h, key_mask, additive); });
  auto logits = run_unit(units_.back(), [&] { return qa.forward(h); });
  auto start_logits = logits.select(-1, 0).contiguous();
  auto end_logits = logits.select(-1, 1).contiguous();
  auto prep = [seq](const at::Tensor& p) { return (p.dim() > 1 ? p.squeeze(-1) : p).to(at::kLong).clamp(0, seq); };
  auto ce = [seq](const at::Tensor& l, const at::Tensor& t) {
    return at::cross_entropy_loss(l, t, {}, at::Reduction::Mean, seq);
  };
  return (ce(start_logits, prep(b.start_positions)) + ce(end_logits, prep(b.end_positions))) / 2;
}

at::Tensor Sharded::forward_backward(model::BertForQuestionAnswering& model, const train::Batch& b, double scale,
                                     bool, train::StepTimer& timer) {
  for (auto& u : units_) {
    u.pending = u.params.size();
    if (resharded_) reshard(u);
  }
  resharded_ = false;
  at::Tensor loss;
  {
    train::AutocastGuard autocast(ctx_.device.type(), ctx_.precision);
    if (plan_.shard_params) loss = sharded_forward(model, b);
    else loss = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions).loss;
  }
  timer.mark(train::Phase::Forward);
  (loss * scale).backward();
  timer.mark(train::Phase::Backward);
  return loss.detach();
}

double Sharded::finish_gradients(train::StepTimer& timer) {
  // Units whose hooks did not all fire (a parameter unused in this forward)
  // are reduced now, in unit order on every rank.
  auto t0 = Clock::now();
  for (auto& u : units_)
    if (u.pending > 0) {
      u.pending = 0;
      gather(u);  // so that reshard finds it as reduce expects
      reduce(u);
    }
  timer.mark(train::Phase::Comm);
  return ms_since(t0);
}

std::unique_ptr<torch::optim::AdamW> Sharded::make_optimizer(const train::OptimizerConfig& cfg) {
  std::vector<at::Tensor> decay, no_decay;
  for (auto& f : flats_) (f.decay ? decay : no_decay).push_back(f.shard);
  auto options = [&](double wd) {
    return torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).eps(cfg.eps).weight_decay(wd);
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options(cfg.weight_decay)));
  if (!no_decay.empty()) groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
  auto opt = std::make_unique<train::FusedAdamW>(groups, options(cfg.weight_decay));
  optimizer_ = opt.get();
  return opt;
}

std::vector<at::Tensor> Sharded::optimizer_params() const {
  std::vector<at::Tensor> out;
  for (auto& f : flats_) out.push_back(f.shard);
  return out;
}

double Sharded::clip_grad_norm(double max_norm) {
  at::NoGradGuard no_grad;
  auto sq = at::zeros({1}, flats_.front().full.options().dtype(at::kFloat));
  for (auto& f : flats_)
    if (f.shard.grad().defined()) sq += f.shard.grad().to(at::kFloat).pow(2).sum();
  auto t0 = Clock::now();
  ctx_.comm->allreduce(sq);
  comm_ms_ += ms_since(t0);
  auto norm = sq.sqrt();
  // torch.nn.utils.clip_grad_norm_: scaled by min(1, max_norm / (norm + 1e-6)).
  auto coef = (at::full_like(norm, max_norm) / (norm + 1e-6)).clamp_max(1.0);
  for (auto& f : flats_)
    if (f.shard.grad().defined()) f.shard.mutable_grad().mul_(coef.to(f.shard.grad().dtype()));
  return norm.item<double>();
}

void Sharded::after_optimizer_step() {
  note_peak();
  if (plan_.shard_params) return;  // the partitions are the parameters
  auto t0 = Clock::now();
  at::NoGradGuard no_grad;
  for (auto& f : flats_) {
    auto mine = f.shard.clone();  // the gather's output contains the input: no aliasing
    ctx_.comm->allgather(f.full, mine);
  }
  comm_ms_ = ms_since(t0);  // the next step's figure starts with this gather
}

void Sharded::unshard_model() {
  for (auto& u : units_) gather(u);
  resharded_ = plan_.shard_params;
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
    return bytes;
  }
  if (optimizer_)
    for (const auto& [key, state] : optimizer_->state())
      if (auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
        bytes += s->exp_avg().nbytes() + s->exp_avg_sq().nbytes();
  return bytes;
}

void Sharded::note_peak() { peak_transient_ = std::max(peak_transient_, current_bytes(true)); }

size_t Sharded::model_state_bytes() const { return current_bytes(false) + peak_transient_; }

bool Sharded::all_finite(bool local_finite) {
  if (!ctx_.comm) return local_finite;
  auto bad = at::full({1}, local_finite ? 0.0f : 1.0f, at::TensorOptions().device(ctx_.device));
  ctx_.comm->allreduce(bad);
  return bad.item<float>() == 0.0f;
}

int64_t Sharded::parameters() const {
  int64_t n = 0;
  for (auto& f : flats_) n += f.numel;
  return n;
}

int64_t Sharded::largest_unit() const {
  int64_t best = 0;
  for (auto& u : units_) {
    int64_t n = 0;
    for (auto i : u.flats) n += flats_[i].numel;
    best = std::max(best, n);
  }
  return best;
}

double theoretical_model_state_bytes(const std::string& strategy, int stage, const std::string& sharding, double psi,
                                     int n, double largest_unit) {
  const double N = n, U = largest_unit;
  if (strategy == "ddp" || strategy == "baseline" || strategy == "dp") return 16 * psi;
  if (strategy == "zero" && stage == 1) return 8 * psi + 8 * psi / N + 4 * U;
  if (strategy == "zero" && stage == 2) return 4 * psi + 12 * psi / N + 4 * U;
  if ((strategy == "zero" && stage == 3) || (strategy == "fsdp" && sharding == "full")) return 16 * psi / N + 8 * U;
  if (strategy == "fsdp" && sharding == "grad-op") return 4 * psi + 16 * psi / N + 4 * U;
  fail("no memory model for strategy {} (stage {}, sharding {})", strategy, stage, sharding);
}

}  // namespace hpcbench::strategies::shard
