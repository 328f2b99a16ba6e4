#include "predict/layout.h"

#include <torch/csrc/autograd/grad_mode.h>

#include "core/error.h"
#include "model/bert.h"
#include "model/sharding_units.h"

namespace hpcbench::predict {

Layout model_layout(const model::BertConfig& config, int64_t seq) {
  at::NoGradGuard no_grad;
  model::BertForQuestionAnswering m(config);
  Layout l;
  l.model = config.name;
  l.hidden = config.hidden_size;
  l.seq = seq;
  auto units = model::sharding_units(*m);
  const double h = static_cast<double>(config.hidden_size), i = static_cast<double>(config.intermediate_size);
  const double s = static_cast<double>(seq);
  double total = 0;
  for (auto& u : units) {
    l.unit_names.push_back(u.name);
    l.unit_numel.push_back(0);
    // train/flops.h per unit: a layer's 4h² + 2hi matmul weights at 6 FLOPs
    // per weight and token plus attention's 12hs²; the head's 2h weights;
    // the embeddings are lookups (no matmul), counted as nothing.
    double f = 0;
    if (u.name.starts_with("layer")) f = 6 * (4 * h * h + 2 * h * i) * s + 12 * h * s * s;
    else if (u.name == "head") f = 6 * 2 * h * s;
    l.unit_share.push_back(f);
    total += f;
  }
  for (auto& x : l.unit_share) x /= total;

  for (auto& item : m->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    size_t unit = units.size();
    for (size_t k = 0; k < units.size(); ++k)
      if (item.key().starts_with(units[k].prefix)) unit = k;
    if (unit == units.size()) fail("model {}: parameter {} is in no sharding unit", config.name, item.key());
    l.param_numel.push_back(item.value().numel());
    l.param_unit.push_back(unit);
    l.unit_numel[unit] += item.value().numel();
    l.parameters += item.value().numel();
  }
  return l;
}

}  // namespace hpcbench::predict
