#include "strategies/shard/flat_param.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "model/sharding_units.h"
#include "strategies/shard/state.h"
#include "train/optimizer.h"

namespace hpcbench::strategies::shard {

size_t storage_bytes(const at::Tensor& t) { return t.defined() ? t.storage().nbytes() : 0; }

void flatten(ShardState& s, model::BertForQuestionAnswering& model) {
  std::map<std::pair<size_t, bool>, size_t> flat_of;
  auto policy = model::sharding_units(*model);
  for (size_t u = 0; u < policy.size(); ++u) {
    Unit unit;
    unit.name = policy[u].name;
    unit.gather_what = "all_gather of " + unit.name;
    unit.reduce_what = (s.plan.shard_grads ? "reduce_scatter of " : "all_reduce of ") + unit.name;
    unit.replicate_what = "all_reduce across shard groups of " + unit.reduce_what;
    unit.module = policy[u].module;
    s.units.push_back(std::move(unit));
    for (auto& np : policy[u].module->named_parameters(true)) {
      auto& p = np.value();
      if (!p.requires_grad()) continue;
      const std::string name = policy[u].prefix + np.key();
      bool decay = train::decays(name);
      auto key = std::make_pair(u, decay);
      if (!flat_of.count(key)) {
        flat_of[key] = s.flats.size();
        FlatParam f;
        f.decay = decay;
        f.unit = u;
        s.flats.push_back(std::move(f));
        s.units[u].flats.push_back(flat_of[key]);
      }
      auto& f = s.flats[flat_of[key]];
      f.params.push_back(p);
      f.names.push_back(name);
      f.offsets.push_back(f.numel);
      f.numel += p.numel();
      s.units[u].params.push_back(s.params.size());
      s.unit_of.push_back(u);
      s.params.push_back(p);
    }
  }
  size_t in_model = 0;
  for (auto& p : model->parameters())
    if (p.requires_grad()) ++in_model;
  if (in_model != s.params.size())
    fail("{}: the model's sharding units hold {} of its {} parameters", s.plan.name, s.params.size(), in_model);
  for (auto& u : s.units)
    std::stable_sort(u.flats.begin(), u.flats.end(),
                     [&](size_t a, size_t b) { return s.flats[a].decay > s.flats[b].decay; });
}

void partition(ShardState& s) {
  const int parts = s.shard_comm().size(), part = s.shard_comm().rank();
  at::NoGradGuard no_grad;
  for (auto& f : s.flats) {
    const int64_t padded = padded_numel(f.numel, parts);
    f.shard_numel = padded / parts;
    auto master = at::zeros({padded}, f.params.front().options().dtype(at::kFloat).requires_grad(false));
    for (size_t k = 0; k < f.params.size(); ++k)
      master.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()).copy_(f.params[k]);
    s.comm().broadcast(master, 0);  // rank 0's initial state wins, whatever each rank drew
    auto slice = master.narrow(0, part * f.shard_numel, f.shard_numel);
    // The optimizer's partition is a view of the replicated fp32 parameters
    // when those exist (partitions of replicated parameters in fp32),
    // otherwise memory of its own.
    f.shard_is_view = !s.plan.shard_params && !s.mixed;
    f.shard = f.shard_is_view ? slice : slice.clone();
    if (!s.plan.shard_params) f.full = s.mixed ? master.to(s.compute_dtype) : master;
  }
}

void use_compute_views(ShardState& s) {
  for (auto& f : s.flats)
    for (size_t k = 0; k < f.params.size(); ++k)
      f.params[k].set_data(f.full.narrow(0, f.offsets[k], f.params[k].numel()).view(f.params[k].sizes()));
  s.master_views = false;
}

}  // namespace hpcbench::strategies::shard
