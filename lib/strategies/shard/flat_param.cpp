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
      f.add(p);
      f.names.push_back(name);
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
  const bool replicated = !s.plan.shard_params;
  for (auto& f : s.flats)
    make_masters(f, &s.comm(), s.shard_comm().size(), s.shard_comm().rank(), s.compute_dtype, replicated);
}

void use_compute_views(ShardState& s) {
  for (auto& f : s.flats) view_compute(f);
  s.master_views = false;
}

}  // namespace hpcbench::strategies::shard
